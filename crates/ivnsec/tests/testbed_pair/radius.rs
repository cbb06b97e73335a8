//! 802.1X with EAP-TLS against a real RADIUS server: FreeRADIUS configured by
//! `ivnsec pki freeradius` in a namespace of the test's own, with `eapol_test` (an independent
//! RADIUS client and EAP-TLS peer) and with our own RADIUS client
//! (`ivnsec_node::dot1x::radius::RadiusClient`).
//!
//! Our client runs in the namespace by running this test binary again there
//! (`ip netns exec NS <this binary> --ignored --exact radius::client_in_namespace`): the process
//! never switches namespace itself.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::net::{Netns, ip};
use crate::common::radius::FreeRadius;
use crate::common::{TempDir, VIN, have, ivnsec, skip_reason, stderr, stdout, text};

const SECRET: &str = "ivnsec-radius-test";

fn skip() -> bool {
    if let Some(r) = skip_reason() {
        eprintln!("skipped: {r}");
        return true;
    }
    for tool in ["freeradius", "eapol_test"] {
        if !have(tool) && !Path::new(&format!("/usr/sbin/{tool}")).exists() {
            eprintln!("skipped: no {tool} (scripts/setup installs it)");
            return true;
        }
    }
    false
}

fn netns(tag: &str) -> Netns {
    let prefix = ivnsec_net::testbed::random_prefix().unwrap();
    let ns = Netns(format!("{prefix}-{tag}"));
    ip(&["netns", "add", &ns.0]);
    ip(&["-n", &ns.0, "link", "set", "lo", "up"]);
    ns
}

fn ok(o: &std::process::Output, what: &str) {
    assert!(o.status.success(), "{what}: {}{}", stdout(o), stderr(o));
}

/// `eapol_test` as ECU `ecu` of the PKI `pki` (trusting `pki`'s CA for the server); returns
/// whether it ended in SUCCESS and its output.
fn eapol_test(ns: &str, d: &TempDir, pki: &Path, server_ca: &Path, ecu: &str) -> (bool, String) {
    let conf = d.path(&format!("eapol-{ecu}.conf"));
    std::fs::write(
        &conf,
        format!(
            "network={{\n\tkey_mgmt=IEEE8021X\n\teap=TLS\n\tidentity=\"{ecu}\"\n\t\
             ca_cert=\"{ca}\"\n\tclient_cert=\"{cert}\"\n\tprivate_key=\"{key}\"\n\t\
             eapol_flags=0\n}}\n",
            ca = server_ca.display(),
            cert = pki.join(format!("ecu/{ecu}.pem")).display(),
            key = pki.join(format!("ecu/{ecu}.key")).display(),
        ),
    )
    .unwrap();
    let o = Command::new("ip")
        .args(["netns", "exec", ns, "eapol_test", "-c"])
        .arg(&conf)
        .args(["-a", "127.0.0.1", "-s", SECRET, "-r0", "-t8"])
        .output()
        .unwrap();
    let out = text(&o.stdout);
    (
        o.status.success() && out.trim_end().ends_with("SUCCESS"),
        out,
    )
}

/// The MSK eapol_test derived ("EAP-TLS: Derived key - hexdump(len=64): …").
fn derived_msk(out: &str) -> Option<Vec<u8>> {
    let l = out
        .lines()
        .find(|l| l.contains("Derived key - hexdump(len=64):"))?;
    hex::decode(
        l.rsplit_once("):")?
            .1
            .split_whitespace()
            .collect::<String>(),
    )
    .ok()
}

#[test]
fn eapol_test_eap_tls_with_crl() {
    if skip() {
        return;
    }
    let d = TempDir::new("radius-eapol");
    let ns = netns("rad");
    let pki = d.path("pki");
    let pki_s = pki.to_str().unwrap();
    ok(
        &ivnsec(&d, &["pki", "init", "--dir", pki_s, "--vehicle", VIN]),
        "pki init",
    );
    for ecu in ["ecu1", "ecu2"] {
        ok(
            &ivnsec(&d, &["pki", "issue", "--dir", pki_s, "--ecu", ecu]),
            "pki issue",
        );
    }
    ok(
        &ivnsec(&d, &["pki", "revoke", "--dir", pki_s, "--ecu", "ecu2"]),
        "pki revoke",
    );
    let other = d.path("other");
    let other_s = other.to_str().unwrap();
    ok(
        &ivnsec(&d, &["pki", "init", "--dir", other_s, "--vehicle", VIN]),
        "pki init other",
    );
    ok(
        &ivnsec(&d, &["pki", "issue", "--dir", other_s, "--ecu", "ecu3"]),
        "pki issue other",
    );

    let fr = FreeRadius::start(&ns.0, &d.0, &pki, &[("127.0.0.1", SECRET)]);
    let ca = pki.join("ca.pem");

    let (success, out) = eapol_test(&ns.0, &d, &pki, &ca, "ecu1");
    assert!(success, "ecu1 refused:\n{out}\n{}", fr.log());
    assert!(out.contains("MPPE keys OK: 1  mismatch: 0"), "{out}");
    let msk = derived_msk(&out).expect("eapol_test printed no MSK");
    let sent = fr.sent_msk();
    assert_eq!(sent.len(), 1, "{}", fr.log());
    assert_eq!(
        &sent[0][..],
        &msk[..],
        "MSK of eapol_test vs MS-MPPE keys of FreeRADIUS"
    );
    assert!(
        out.contains("Locally derived EAP Session-Id matches EAP-Key-Name from server")
            || fr.log().contains("EAP-Key-Name :="),
        "no EAP-Key-Name in the reply"
    );

    let (success, out) = eapol_test(&ns.0, &d, &pki, &ca, "ecu2");
    assert!(!success, "revoked ecu2 accepted:\n{out}");
    assert!(fr.log().contains("certificate revoked"), "{}", fr.log());

    let (success, out) = eapol_test(&ns.0, &d, &other, &ca, "ecu3");
    assert!(!success, "ecu3 of another CA accepted:\n{out}");
    assert_eq!(fr.sent_msk().len(), 1);
}

/// Our RADIUS client against FreeRADIUS: a wrong secret gets no answer (Timeout after the
/// retries), the right one gets an Access-Challenge carrying EAP-TLS Start for an
/// EAP-Response/Identity.
#[test]
fn client_against_freeradius() {
    if skip() {
        return;
    }
    let d = TempDir::new("radius-client");
    let ns = netns("rac");
    let pki = d.path("pki");
    let pki_s = pki.to_str().unwrap();
    ok(
        &ivnsec(&d, &["pki", "init", "--dir", pki_s, "--vehicle", VIN]),
        "pki init",
    );
    let fr = FreeRadius::start(&ns.0, &d.0, &pki, &[("127.0.0.1", SECRET)]);
    let run = |secret: &str| {
        let f = d.path(&format!("secret-{}", secret.len()));
        std::fs::write(&f, format!("{secret}\n")).unwrap();
        std::fs::set_permissions(&f, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        let o = Command::new("ip")
            .args(["netns", "exec", &ns.0])
            .arg(std::env::current_exe().unwrap())
            .args([
                "--ignored",
                "--exact",
                "radius::client_in_namespace",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("IVNSEC_TEST_RADIUS_SECRET_FILE", &f)
            .output()
            .unwrap();
        let out = format!("{}{}", text(&o.stdout), text(&o.stderr));
        assert!(o.status.success(), "{out}");
        out.lines()
            .find_map(|l| l.split_once("answer: ").map(|(_, a)| a))
            .unwrap_or_else(|| panic!("no answer line:\n{out}"))
            .to_string()
    };
    let wrong = run("not-the-secret");
    assert!(wrong.starts_with("timeout 3"), "{wrong}");
    assert!(
        wrong.contains("check that it runs and that the secret matches its clients.conf"),
        "{wrong}"
    );
    let right = run(SECRET);
    assert_eq!(right, "challenge eap-tls-start", "{}", fr.log());
}

/// Runs inside the namespace for `client_against_freeradius` only.
#[test]
#[ignore = "run by client_against_freeradius inside its namespace"]
fn client_in_namespace() {
    use ivnsec_node::dot1x::radius::{
        AccessRequest, RadiusAnswer, RadiusClient, RadiusConfig, read_secret,
    };
    let Some(f) = std::env::var_os("IVNSEC_TEST_RADIUS_SECRET_FILE") else {
        return;
    };
    let secret = read_secret(Path::new(&f)).unwrap();
    let server = "127.0.0.1:1812".parse().unwrap();
    let mut cfg = RadiusConfig::new(server, secret, "ivnsec-test");
    cfg.timeout = Duration::from_millis(300);
    cfg.retries = 2;
    let mut c = RadiusClient::new(cfg).unwrap();
    let supplicant = [2, 0, 0, 0, 0, 2];
    let identity = b"ecu1";
    let mut eap = vec![2, 7, 0, 5 + identity.len() as u8, 1];
    eap.extend_from_slice(identity);
    let t0 = Instant::now();
    c.submit(
        t0,
        &AccessRequest {
            supplicant,
            authenticator: [2, 0, 0, 0, 0, 1],
            identity,
            eap: &eap,
        },
    )
    .unwrap();
    let deadline = t0 + Duration::from_secs(5);
    let answer = loop {
        std::thread::sleep(Duration::from_millis(20));
        let mut got = c.poll(Instant::now());
        if let Some((s, a)) = got.pop() {
            assert_eq!(s, supplicant);
            break a;
        }
        assert!(Instant::now() < deadline, "{:?}", c.counters());
    };
    let line = match answer {
        RadiusAnswer::Timeout { tries } => format!(
            "timeout {tries}: {}",
            RadiusAnswer::timeout_message(server, tries)
        ),
        // EAP-Request (1), identifier, length, Type 13 (EAP-TLS), flags with Start (0x20).
        RadiusAnswer::Challenge { eap } => match eap.as_slice() {
            [1, _, _, _, 13, flags, ..] if flags & 0x20 != 0 => "challenge eap-tls-start".into(),
            _ => format!("challenge {}", hex::encode(&eap)),
        },
        other => format!("{other:?}"),
    };
    println!("answer: {line}");
    println!("counters: {:?}", c.counters());
}
