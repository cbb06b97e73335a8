//! `ivnsec pki` (docs/keys.md): certificates and CRLs checked by OpenSSL, and every refusal of
//! bad input. The key server is in `keyserver.rs`.

use crate::common::{TempDir, VIN, text};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

pub(crate) fn ok(d: &TempDir, args: &[&str]) -> String {
    let o = d.run(args);
    assert!(
        o.status.success(),
        "{args:?}: {}{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    text(&o.stdout) + &text(&o.stderr)
}

pub(crate) fn fails(d: &TempDir, args: &[&str], code: i32, says: &str) {
    let o = d.run(args);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(code), "{args:?}: {err}");
    assert!(err.contains(says), "{args:?}: {err:?} lacks {says:?}");
}

pub(crate) fn openssl(args: &[&str]) -> (bool, String) {
    let o = Command::new("openssl")
        .args(args)
        .output()
        .expect("openssl");
    (o.status.success(), text(&o.stdout) + &text(&o.stderr))
}

pub(crate) fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

#[test]
fn certificates_verify_with_openssl_and_the_crl_lists_the_revoked_serial() {
    let d = TempDir::new("pki-openssl");
    for intermediate in [false, true] {
        let dir = d.path(if intermediate { "inter" } else { "flat" });
        let dir = dir.to_str().unwrap();
        let mut init = vec!["pki", "init", "--dir", dir, "--vehicle", VIN];
        if intermediate {
            init.push("--intermediate");
        }
        ok(&d, &init);
        let p = Path::new(dir);
        let keys: &[&str] = if intermediate {
            &["ca.key", "root.key"]
        } else {
            &["ca.key"]
        };
        for f in keys {
            assert_eq!(mode(&p.join(f)), 0o600, "{f}");
        }
        // The CRL is there from the start, empty, and OpenSSL reads it.
        let (good, out) = openssl(&["crl", "-in", &format!("{dir}/crl.pem"), "-noout", "-text"]);
        assert!(good, "{out}");
        assert!(out.contains("No Revoked Certificates"), "{out}");
        let algos = ["ecdsa-p256", "ed25519", "rsa-2048", "rsa-3072", "rsa-4096"];
        let mut serials = Vec::new();
        for algo in algos {
            let ecu = format!("ecu-{algo}");
            let out = ok(
                &d,
                &["pki", "issue", "--dir", dir, "--ecu", &ecu, "--algo", algo],
            );
            // The private key is in the file, never in the output.
            let key = std::fs::read_to_string(p.join(format!("ecu/{ecu}.key"))).unwrap();
            assert!(key.contains("PRIVATE KEY"));
            assert!(!out.contains("PRIVATE KEY"), "{out}");
            let body: String = key.lines().nth(1).unwrap().to_string();
            assert!(!out.contains(&body), "{out}");
            assert_eq!(mode(&p.join(format!("ecu/{ecu}.key"))), 0o600);
            let cert = format!("{dir}/ecu/{ecu}.pem");
            let (good, out) = if intermediate {
                openssl(&[
                    "verify",
                    "-CAfile",
                    &format!("{dir}/root.pem"),
                    "-untrusted",
                    &format!("{dir}/ca.pem"),
                    &cert,
                ])
            } else {
                openssl(&["verify", "-CAfile", &format!("{dir}/ca.pem"), &cert])
            };
            assert!(good && out.contains(": OK"), "{algo}: {out}");
            // Name in the SAN, TLS client and server auth, the key algorithm asked for.
            let (_, x) = openssl(&["x509", "-in", &cert, "-noout", "-text"]);
            assert!(x.contains(&format!("DNS:{ecu}")), "{x}");
            assert!(
                x.contains("TLS Web Client Authentication")
                    && x.contains("TLS Web Server Authentication"),
                "{x}"
            );
            assert!(x.contains(&format!("O = {VIN}")), "{x}");
            let want = match algo {
                "ecdsa-p256" => "prime256v1",
                "ed25519" => "ED25519",
                "rsa-2048" => "(2048 bit)",
                "rsa-3072" => "(3072 bit)",
                _ => "(4096 bit)",
            };
            assert!(x.contains(want), "{algo}: {x}");
            let (_, s) = openssl(&["x509", "-in", &cert, "-noout", "-serial"]);
            serials.push(s.trim().trim_start_matches("serial=").to_string());
        }
        ok(&d, &["pki", "revoke", "--dir", dir, "--ecu", "ecu-ed25519"]);
        let (good, out) = openssl(&["crl", "-in", &format!("{dir}/crl.pem"), "-noout", "-text"]);
        assert!(good, "{out}");
        assert!(
            out.contains(&format!("Serial Number: {}", serials[1])),
            "{out}"
        );
        assert!(!out.contains(&serials[0]), "{out}");
        // The CRL is signed by the issuing CA: with it, OpenSSL refuses the revoked one only.
        let bundle = d.path("bundle.pem");
        let mut b = std::fs::read_to_string(format!("{dir}/ca.pem")).unwrap();
        if intermediate {
            b += &std::fs::read_to_string(format!("{dir}/root.pem")).unwrap();
        }
        b += &std::fs::read_to_string(format!("{dir}/crl.pem")).unwrap();
        std::fs::write(&bundle, b).unwrap();
        let bundle = bundle.to_str().unwrap();
        let chk = |ecu: &str| {
            openssl(&[
                "verify",
                "-crl_check",
                "-CAfile",
                bundle,
                &format!("{dir}/ecu/{ecu}.pem"),
            ])
        };
        let (good, out) = chk("ecu-ed25519");
        assert!(!good && out.contains("certificate revoked"), "{out}");
        let (good, out) = chk("ecu-ecdsa-p256");
        assert!(good, "{out}");
        // pki list shows it; revoking again is no error.
        let out = ok(&d, &["pki", "list", "--dir", dir, "--json"]);
        let v: serde_json::Value = serde_json::from_str(&out[..out.rfind('}').unwrap() + 1])
            .unwrap_or_else(|e| panic!("{e}: {out}"));
        let st: Vec<(String, String)> = v["ecus"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["ecu"].as_str().unwrap().to_string(),
                    e["status"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        assert_eq!(st.len(), 5);
        for (e, s) in &st {
            assert_eq!(
                s,
                if e == "ecu-ed25519" {
                    "revoked"
                } else {
                    "valid"
                },
                "{v}"
            );
        }
        assert_eq!(v["crl_number"], 2);
        assert_eq!(v["ca"]["intermediate"], intermediate);
        let out = ok(&d, &["pki", "revoke", "--dir", dir, "--ecu", "ecu-ed25519"]);
        assert!(out.contains("already revoked"), "{out}");
        // A revoked ECU can be enrolled again; a valid one not.
        ok(&d, &["pki", "issue", "--dir", dir, "--ecu", "ecu-ed25519"]);
        fails(
            &d,
            &["pki", "issue", "--dir", dir, "--ecu", "ecu-ed25519"],
            2,
            "revoke it first",
        );
    }
}

#[test]
fn bad_input_exits_2_with_a_reason() {
    let d = TempDir::new("pki-bad");
    let dir = d.path("pki");
    let dir = dir.to_str().unwrap();
    for vin in [
        "",
        "WVWZZZ1JZXW00000",
        "WVWZZZ1JZXW00000I",
        "../../../../tmp/x",
    ] {
        fails(
            &d,
            &["pki", "init", "--dir", dir, "--vehicle", vin],
            2,
            "ISO 3779",
        );
    }
    assert!(!Path::new(dir).exists(), "nothing made for a bad VIN");
    fails(&d, &["pki", "list", "--dir", dir], 2, "no CA here");
    ok(&d, &["pki", "init", "--dir", dir, "--vehicle", VIN]);
    fails(
        &d,
        &["pki", "init", "--dir", dir, "--vehicle", VIN],
        2,
        "already holds a CA",
    );
    for ecu in ["../ca", "ECU1", "a/b", "a.b", "x-", ""] {
        fails(
            &d,
            &["pki", "issue", "--dir", dir, "--ecu", ecu],
            2,
            "DNS label",
        );
        fails(
            &d,
            &["pki", "revoke", "--dir", dir, "--ecu", ecu],
            2,
            "DNS label",
        );
    }
    fails(
        &d,
        &[
            "pki", "issue", "--dir", dir, "--ecu", "e1", "--algo", "rsa-1024",
        ],
        2,
        "choose one of ecdsa-p256",
    );
    fails(
        &d,
        &["pki", "issue", "--dir", dir, "--ecu", "e1", "--days", "0"],
        2,
        "--days 0",
    );
    fails(
        &d,
        &["pki", "revoke", "--dir", dir, "--ecu", "nobody"],
        2,
        "has no certificate",
    );
    // A CA key others may read is refused; so is one that is no key.
    let key = Path::new(dir).join("ca.key");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    fails(
        &d,
        &["pki", "issue", "--dir", dir, "--ecu", "e1"],
        2,
        "readable by group or others",
    );
    let good = std::fs::read(&key).unwrap();
    std::fs::remove_file(&key).unwrap();
    std::fs::write(&key, "not a key\n").unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    fails(
        &d,
        &["pki", "issue", "--dir", dir, "--ecu", "e1"],
        2,
        "not a PKCS#8",
    );
    std::fs::write(&key, good).unwrap();
    std::fs::write(Path::new(dir).join("crl.pem"), "garbage").unwrap();
    fails(
        &d,
        &["pki", "issue", "--dir", dir, "--ecu", "e1"],
        2,
        "crl.pem",
    );
    assert!(!Path::new(dir).join("ecu/e1.key").exists());
}

#[test]
fn freeradius_module_for_the_vehicle_pki() {
    let d = TempDir::new("pki-freeradius");
    let pki = d.path("pki");
    let pki_s = pki.to_str().unwrap();
    let out = d.path("fr");
    let out_s = out.to_str().unwrap();
    fails(
        &d,
        &["pki", "freeradius", "--dir", pki_s, "--out", out_s],
        2,
        "ivnsec pki init",
    );
    ok(&d, &["pki", "init", "--dir", pki_s, "--vehicle", VIN]);
    fails(
        &d,
        &[
            "pki",
            "freeradius",
            "--dir",
            pki_s,
            "--out",
            out_s,
            "--server-name",
            "Bad_Name",
        ],
        2,
        "--server-name",
    );
    let said = ok(&d, &["pki", "freeradius", "--dir", pki_s, "--out", out_s]);
    assert!(said.contains("issued now"), "{said}");
    let conf = std::fs::read_to_string(out.join("eap-tls.conf")).unwrap();
    for want in [
        "check_crl = yes",
        "tls_min_version = \"1.2\"",
        "tls_max_version = \"1.3\"",
        "default_eap_type = tls",
        "tls-config tls-common {",
    ] {
        assert!(conf.contains(want), "{want} missing:\n{conf}");
    }
    let cert = pki.join("ecu/radius.pem");
    assert!(conf.contains(&std::fs::canonicalize(&cert).unwrap().display().to_string()));
    let ca = std::fs::read_to_string(out.join("ca.pem")).unwrap();
    assert!(
        ca.contains("BEGIN CERTIFICATE") && ca.contains("BEGIN X509 CRL"),
        "{ca}"
    );
    let (good, said) = openssl(&[
        "verify",
        "-purpose",
        "sslserver",
        "-crl_check",
        "-CAfile",
        out.join("ca.pem").to_str().unwrap(),
        cert.to_str().unwrap(),
    ]);
    assert!(good, "{said}");
    // A second run keeps the certificate.
    let said = ok(&d, &["pki", "freeradius", "--dir", pki_s, "--out", out_s]);
    assert!(said.contains("kept"), "{said}");
    let help = ok(&d, &["pki", "freeradius", "--help"]);
    assert!(
        help.contains("Example") && help.contains("--server-name"),
        "{help}"
    );
}
