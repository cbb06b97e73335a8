//! 802.1X on a testbed of the test's own (docs/8021x.md): sensors authenticate with EAP-TLS
//! (certificates of `ivnsec pki`) to the consumer, which passes EAP to a FreeRADIUS started by
//! the test in the consumer's namespace (configured by `ivnsec pki freeradius`); both ends
//! derive the CAK from the EAP keys and run MKA on it. hostapd and wpa_supplicant (wired
//! drivers) stand in as independent authenticator and supplicant.
//!
//! Needs root (namespaces) and FreeRADIUS (scripts/setup installs it); skips with a printed
//! reason otherwise.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::common::mka::{Ecu, diagnose, keygen_mka, pae_testbed, secured};
use crate::common::net::ping_counts;
use crate::common::proc::wait_for_or;
use crate::common::radius::FreeRadius;
use crate::common::{Proc, TempDir, VIN, have, text};

const SECRET: &str = "testing-radius-secret-0123";

/// Skips when FreeRADIUS is missing.
macro_rules! require_freeradius {
    () => {
        if !have("freeradius") {
            eprintln!("skipped: freeradius is not installed (scripts/setup installs it)");
            return;
        }
    };
}

/// The PKI (CA, the sensors' certificates) and the RADIUS secret file.
struct Fixture {
    d: TempDir,
    pki: PathBuf,
    secret: PathBuf,
}

impl Fixture {
    fn new(tag: &str, ecus: &[&str]) -> Fixture {
        let d = TempDir::new(tag);
        let pki = d.path("pki");
        let p = pki.to_str().unwrap().to_string();
        let run = |args: &[&str]| {
            let o = d.run(args);
            assert!(o.status.success(), "{args:?}: {}", text(&o.stderr));
        };
        run(&["pki", "init", "--dir", &p, "--vehicle", VIN]);
        for e in ecus {
            run(&["pki", "issue", "--dir", &p, "--ecu", e]);
        }
        let secret = d.path("radius.secret");
        std::fs::write(&secret, SECRET).unwrap();
        set_mode(&secret);
        Fixture { d, pki, secret }
    }
    fn run(&self, args: &[&str]) {
        let o = self.d.run(args);
        assert!(o.status.success(), "{args:?}: {}", text(&o.stderr));
    }
    fn cert(&self, ecu: &str) -> String {
        self.pki
            .join(format!("ecu/{ecu}.pem"))
            .display()
            .to_string()
    }
    fn key(&self, ecu: &str) -> String {
        self.pki
            .join(format!("ecu/{ecu}.key"))
            .display()
            .to_string()
    }
    fn ca(&self) -> String {
        self.pki.join("ca.pem").display().to_string()
    }
    fn secret(&self) -> String {
        self.secret.display().to_string()
    }
}

fn set_mode(p: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// `macsec up --eap-tls` options of sensor `ecu`.
fn supplicant_args(f: &Fixture, ecu: &str) -> Vec<String> {
    [
        "--eap-tls",
        "--cert",
        &f.cert(ecu),
        "--key",
        &f.key(ecu),
        "--ca",
        &f.ca(),
        "--eap-start-seconds",
        "1",
        "--eap-held-seconds",
        "1",
        "--hello-seconds",
        "1",
        "--ramp-up-ms",
        "20",
        "--priority",
        "20",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// `macsec up --authenticator` options of the consumer, RADIUS at `radius`.
fn authenticator_args(f: &Fixture, radius: &str, extra: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = [
        "--authenticator",
        "--radius",
        radius,
        "--radius-secret",
        &f.secret(),
        "--eap-held-seconds",
        "1",
        "--hello-seconds",
        "1",
        "--ramp-up-ms",
        "20",
        "--priority",
        "1",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

fn events_named(e: &Ecu, name: &str) -> Vec<Value> {
    e.events_so_far()
        .into_iter()
        .filter(|x| x["event"] == name)
        .collect()
}

/// The CKN each end derived from its latest EAP success.
fn last_ckn(e: &Ecu) -> Option<String> {
    events_named(e, "eap_success")
        .last()
        .and_then(|x| x["ckn"].as_str().map(str::to_string))
}

/// RADIUS server address in the consumer's namespace: its plain IPv4 address.
fn radius_addr(tb: &ivnsec_net::testbed::Testbed) -> String {
    tb.state().ipv4_of("consumer").unwrap().to_string()
}

fn freeradius(f: &Fixture, tb: &ivnsec_net::testbed::Testbed) -> FreeRadius {
    let st = tb.state();
    let consumer = st.node("consumer").unwrap();
    FreeRadius::start(
        &consumer.namespace,
        &f.d.path("radius"),
        &f.pki,
        &[("0.0.0.0/0", SECRET)],
    )
}

#[test]
fn eap_tls_gives_both_ends_one_cak_then_mka_and_a_reauth_rollover_loses_no_ping() {
    require_root!();
    require_freeradius!();
    let f = Fixture::new("dot1x-pair", &["sensor1"]);
    let tb = pae_testbed(&f.d, 1, true);
    let radius = freeradius(&f, &tb);
    let auth = Ecu::new(&tb, &f.d, "consumer", "10.97.0.10", "eap0");
    let s1 = Ecu::new(&tb, &f.d, "sensor1", "10.97.0.1", "eap0");
    let _pa = auth.up_with(&strs(&authenticator_args(
        &f,
        &radius_addr(&tb),
        &["--reauth-seconds", "8"],
    )));
    let _p1 = s1.up_with(&strs(&supplicant_args(&f, "sensor1")));
    let all = [&auth, &s1];
    wait_for_or(
        30,
        "EAP-TLS success, then MKA secured on the derived CAK",
        || secured(&auth.status(), 1) && secured(&s1.status(), 1),
        || format!("{}\n{}", diagnose(&all), radius.log()),
    );
    // One CAK on both ends: the supplicant's from its own TLS, the authenticator's from the
    // MS-MPPE keys FreeRADIUS sent; and the supplicant's MSK is the one FreeRADIUS sent.
    let (c1, ca) = (last_ckn(&s1), last_ckn(&auth));
    assert!(
        c1.is_some() && c1 == ca,
        "{c1:?} {ca:?}\n{}",
        diagnose(&all)
    );
    let sent = radius.sent_msk();
    let fp = events_named(&s1, "eap_success")[0]["msk_sha256"].clone();
    assert!(
        sent.iter().any(|m| fp == msk_fingerprint(m).as_str()),
        "supplicant MSK fingerprint {fp} not among FreeRADIUS's {} MS-MPPE key pairs",
        sent.len()
    );
    let o = s1
        .exec("ping")
        .args(["-c", "3", "-i", "0.2", "-W", "2", &auth.addr])
        .output()
        .unwrap();
    assert_eq!(ping_counts(&o), (3, 3), "{}", diagnose(&all));
    // Re-authentication every 8 s gives a new CAK; the handover loses no ping.
    let ping = s1
        .exec("ping")
        .args(["-c", "500", "-i", "0.02", "-W", "2", &auth.addr])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_or(
        20,
        "a second EAP success (re-authentication) and MKA on its CAK",
        || {
            events_named(&s1, "eap_success").len() >= 2
                && last_ckn(&s1) == last_ckn(&auth)
                && secured(&s1.status(), 1)
                && s1.status()["key_source_state"]["ca"]["ckn"].as_str() == last_ckn(&s1).as_deref()
        },
        || diagnose(&all),
    );
    assert_ne!(Some(c1.unwrap()), last_ckn(&s1), "the CAK did not change");
    let (sent, got) = ping_counts(&ping.wait_with_output().unwrap());
    assert_eq!(
        (sent, got),
        (500, 500),
        "pings lost across the CAK rollover\n{}",
        diagnose(&all)
    );
}

/// The first 16 hex digits of SHA-256 over the MSK, as the `eap_success` event shows it.
fn msk_fingerprint(msk: &[u8; 64]) -> String {
    use sha2::Digest;
    hex::encode(&sha2::Sha256::digest(msk)[..8])
}

#[test]
fn two_supplicants_on_one_port_share_the_group_ca_and_reach_each_other() {
    require_root!();
    require_freeradius!();
    let f = Fixture::new("dot1x-group", &["sensor1", "sensor2"]);
    let tb = pae_testbed(&f.d, 2, true);
    let radius = freeradius(&f, &tb);
    let auth = Ecu::new(&tb, &f.d, "consumer", "10.96.0.10", "eap0");
    let s1 = Ecu::new(&tb, &f.d, "sensor1", "10.96.0.1", "eap0");
    let s2 = Ecu::new(&tb, &f.d, "sensor2", "10.96.0.2", "eap0");
    let _pa = auth.up_with(&strs(&authenticator_args(
        &f,
        &radius_addr(&tb),
        &["--group-ca", "--reauth-seconds", "6"],
    )));
    let _p1 = s1.up_with(&strs(&supplicant_args(&f, "sensor1")));
    let p2 = s2.up_with(&strs(&supplicant_args(&f, "sensor2")));
    let all = [&auth, &s1, &s2];
    let group = || {
        auth.status()["key_source_state"]["dot1x"]["pae"]["group_ckn"]
            .as_str()
            .map(str::to_string)
    };
    wait_for_or(
        40,
        "both supplicants authenticated and secured on the group CA",
        || {
            let g = group();
            all.iter().all(|e| {
                let s = e.status();
                secured(&s, 2)
                    && s["key_source_state"]["ca"]["ckn"].as_str() == g.as_deref()
                    && s["key_source_state"]["ca"]["handover"]
                        .as_array()
                        .is_some_and(|h| h.is_empty())
            })
        },
        || format!("{}\n{}", diagnose(&all), radius.log()),
    );
    // The pairwise CAKs differ; the group CAK is one.
    assert_ne!(last_ckn(&s1), last_ckn(&s2));
    for (a, b) in [(&s1, &s2), (&s2, &s1), (&s1, &auth)] {
        let o = a
            .exec("ping")
            .args(["-c", "3", "-i", "0.2", "-W", "2", &b.addr])
            .output()
            .unwrap();
        assert_eq!(
            ping_counts(&o),
            (3, 3),
            "{} → {}\n{}",
            a.name,
            b.name,
            diagnose(&all)
        );
    }
    // A re-authentication under the group CA: the new pairwise CA only carries the group CAK;
    // both stay on the group CA and a ping across it loses nothing.
    let g = group();
    let ping = s1
        .exec("ping")
        .args(["-c", "400", "-i", "0.02", "-W", "2", &s2.addr])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_or(
        20,
        "sensor1 re-authenticated and still on the group CA",
        || {
            let st = s1.status();
            events_named(&s1, "eap_success").len() >= 2
                && st["key_source_state"]["ca"]["ckn"].as_str() == g.as_deref()
                && secured(&st, 2)
        },
        || diagnose(&all),
    );
    let (sent, got) = ping_counts(&ping.wait_with_output().unwrap());
    assert_eq!(
        (sent, got),
        (400, 400),
        "pings lost across a re-authentication\n{}",
        diagnose(&all)
    );
    assert_eq!(group(), g, "the group CAK changed");
    // A supplicant that stops logs off: the authenticator ends its session at once.
    let (code, _) = p2.finish(true);
    assert_eq!(code, Some(0));
    wait_for_or(
        5,
        "the authenticator hears sensor2's EAPOL-Logoff",
        || {
            events_named(&auth, "eap_logoff")
                .iter()
                .any(|x| x["peer"] == s2.mac.to_lowercase())
        },
        || diagnose(&all),
    );
    wait_for_or(
        5,
        "sensor2 no longer authenticated",
        || {
            !auth.status()["key_source_state"]["dot1x"]["pae"]["authenticated"]
                .as_array()
                .is_some_and(|a| a.iter().any(|m| m == &Value::from(s2.mac.to_lowercase())))
        },
        || diagnose(&all),
    );
}

#[test]
fn radius_down_moves_to_the_fallback_ca_and_back_without_losing_a_ping() {
    require_root!();
    require_freeradius!();
    let f = Fixture::new("dot1x-fallback", &["sensor1"]);
    let tb = pae_testbed(&f.d, 1, true);
    let mut radius = freeradius(&f, &tb);
    let fallback = keygen_mka(&f.d, "fallback.psk", &[]);
    let fb = fallback.display().to_string();
    let auth = Ecu::new(&tb, &f.d, "consumer", "10.95.0.10", "eap0");
    let s1 = Ecu::new(&tb, &f.d, "sensor1", "10.95.0.1", "eap0");
    let mut aargs = authenticator_args(
        &f,
        &radius_addr(&tb),
        &[
            "--reauth-seconds",
            "4",
            "--radius-timeout-seconds",
            "0.5",
            "--radius-tries",
            "2",
        ],
    );
    aargs.extend(["--fallback-psk".to_string(), fb.clone()]);
    let mut sargs = supplicant_args(&f, "sensor1");
    sargs.extend(["--fallback-psk".to_string(), fb]);
    let _pa = auth.up_with(&strs(&aargs));
    let _p1 = s1.up_with(&strs(&sargs));
    let all = [&auth, &s1];
    let on = |e: &Ecu, ca: &str| {
        let s = e.status();
        secured(&s, 1)
            && s["key_source_state"]["ca"]["label"]
                .as_str()
                .is_some_and(|l| l.starts_with(ca))
            && s["key_source_state"]["ca"]["handover"]
                .as_array()
                .is_some_and(|h| h.is_empty())
    };
    wait_for_or(
        30,
        "both on the EAP-derived CA",
        || on(&auth, "eap") && on(&s1, "eap"),
        || format!("{}\n{}", diagnose(&all), radius.log()),
    );
    // 30 s of pings every 20 ms while FreeRADIUS goes away and comes back.
    let ping = s1
        .exec("ping")
        .args(["-c", "1500", "-i", "0.02", "-W", "2", &auth.addr])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(1));
    radius.stop();
    wait_for_or(
        20,
        "both on the fallback CA after the re-authentication failed",
        || on(&auth, "fallback") && on(&s1, "fallback"),
        || diagnose(&all),
    );
    let failures = events_named(&auth, "eap_failure");
    assert!(
        failures.iter().any(|x| x["reason"]
            .as_str()
            .is_some_and(|r| r.contains("unreachable"))),
        "{failures:?}"
    );
    radius.restart();
    wait_for_or(
        20,
        "both back on an EAP-derived CA",
        || on(&auth, "eap") && on(&s1, "eap"),
        || format!("{}\n{}", diagnose(&all), radius.log()),
    );
    let _ = s1.exec("pkill").args(["-INT", "-x", "ping"]).status();
    let (sent, got) = ping_counts(&ping.wait_with_output().unwrap());
    assert!(sent > 100, "{sent}");
    assert_eq!(
        sent,
        got,
        "pings lost across EAP → fallback → EAP\n{}",
        diagnose(&all)
    );
}

#[test]
fn revoked_and_foreign_certificates_get_eap_failure_no_cak_and_no_data() {
    require_root!();
    require_freeradius!();
    let f = Fixture::new("dot1x-refused", &["sensor1", "sensor2"]);
    // A second vehicle's PKI: its sensor2 is foreign here.
    let other = f.d.path("other-pki");
    let o = other.to_str().unwrap();
    f.run(&["pki", "init", "--dir", o, "--vehicle", "WVWZZZ1JZXW000002"]);
    f.run(&["pki", "issue", "--dir", o, "--ecu", "sensor2"]);
    let p = f.pki.to_str().unwrap().to_string();
    f.run(&["pki", "revoke", "--dir", &p, "--ecu", "sensor1"]);
    let tb = pae_testbed(&f.d, 2, true);
    let radius = freeradius(&f, &tb);
    let auth = Ecu::new(&tb, &f.d, "consumer", "10.94.0.10", "eap0");
    let s1 = Ecu::new(&tb, &f.d, "sensor1", "10.94.0.1", "eap0");
    let s2 = Ecu::new(&tb, &f.d, "sensor2", "10.94.0.2", "eap0");
    let _pa = auth.up_with(&strs(&authenticator_args(&f, &radius_addr(&tb), &[])));
    let _p1 = s1.up_with(&strs(&supplicant_args(&f, "sensor1")));
    let mut a2 = supplicant_args(&f, "sensor2");
    let i = a2.iter().position(|a| a == "--cert").unwrap();
    a2[i + 1] = other.join("ecu/sensor2.pem").display().to_string();
    a2[i + 3] = other.join("ecu/sensor2.key").display().to_string();
    let _p2 = s2.up_with(&strs(&a2));
    let all = [&auth, &s1, &s2];
    wait_for_or(
        30,
        "two EAP failures at the authenticator, one per supplicant",
        || {
            let fails = events_named(&auth, "eap_failure");
            [&s1, &s2]
                .iter()
                .all(|e| fails.iter().any(|x| x["peer"] == e.mac.to_lowercase()))
        },
        || format!("{}\n{}", diagnose(&all), radius.log()),
    );
    for e in all {
        let s = e.status();
        assert!(
            s["key_source_state"]["ca"]["label"].is_null(),
            "{}: {s}",
            e.name
        );
        assert!(s["tx"]["encoding_an"].is_null(), "{}: {s}", e.name);
        assert!(events_named(e, "eap_success").is_empty(), "{}", e.name);
    }
    wait_for_or(
        10,
        "the supplicants count their failures",
        || {
            [&s1, &s2].iter().all(|e| {
                e.status()["key_source_state"]["dot1x"]["eap_failures"].as_u64() >= Some(1)
            })
        },
        || diagnose(&all),
    );
    for e in [&s1, &s2] {
        let o = e
            .exec("ping")
            .args(["-c", "3", "-i", "0.1", "-W", "1", &auth.addr])
            .output()
            .unwrap();
        assert_eq!(ping_counts(&o).1, 0, "{} got through without a CAK", e.name);
    }
    drop(radius);
}

#[test]
fn a_wrong_radius_secret_is_refused_with_a_clear_reason() {
    require_root!();
    require_freeradius!();
    let f = Fixture::new("dot1x-secret", &["sensor1"]);
    let tb = pae_testbed(&f.d, 1, true);
    let st = tb.state();
    let consumer = st.node("consumer").unwrap();
    let radius = FreeRadius::start(
        &consumer.namespace,
        &f.d.path("radius"),
        &f.pki,
        &[("0.0.0.0/0", "not-the-secret-the-authenticator-has")],
    );
    let auth = Ecu::new(&tb, &f.d, "consumer", "10.93.0.10", "eap0");
    let s1 = Ecu::new(&tb, &f.d, "sensor1", "10.93.0.1", "eap0");
    let _pa = auth.up_with(&strs(&authenticator_args(
        &f,
        &radius_addr(&tb),
        &["--radius-timeout-seconds", "0.5", "--radius-tries", "2"],
    )));
    let _p1 = s1.up_with(&strs(&supplicant_args(&f, "sensor1")));
    wait_for_or(
        20,
        "an EAP failure naming the RADIUS secret",
        || {
            events_named(&auth, "eap_failure")
                .iter()
                .any(|x| x["reason"].as_str().is_some_and(|r| r.contains("secret")))
        },
        || format!("{}\n{}", diagnose(&[&auth, &s1]), radius.log()),
    );
    assert!(events_named(&s1, "eap_success").is_empty());
}

/// hostapd with the wired driver as an independent authenticator in the consumer's namespace.
fn hostapd(f: &Fixture, ns: &str, radius: &str) -> Proc {
    let conf = f.d.path("hostapd.conf");
    std::fs::write(
        &conf,
        format!(
            "interface=eth0\ndriver=wired\nieee8021x=1\neapol_version=2\nuse_pae_group_addr=1\n\
             eap_server=0\nown_ip_addr={radius}\nnas_identifier=hostapd\n\
             auth_server_addr={radius}\nauth_server_port=1812\nauth_server_shared_secret={SECRET}\n\
             logger_stdout=-1\nlogger_stdout_level=1\n"
        ),
    )
    .unwrap();
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns, "hostapd", "-dd"]).arg(&conf);
    logged(
        c,
        &f.d.path("hostapd.log"),
        "eth0: interface state",
        "hostapd",
    )
}

/// Starts `c` with its output into `log`, and waits (20 s at most) until `ready` is in it.
fn logged(mut c: Command, log: &Path, ready: &str, what: &str) -> Proc {
    let out = std::fs::File::create(log).unwrap();
    c.stdout(out.try_clone().unwrap())
        .stderr(out)
        .stdin(Stdio::null());
    let mut p = Proc(Some(c.spawn().unwrap()));
    wait_for_or(
        20,
        &format!("{what} ready"),
        || {
            assert!(
                p.child().try_wait().unwrap().is_none(),
                "{what} ended: {}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
            std::fs::read_to_string(log).is_ok_and(|t| t.contains(ready))
        },
        || std::fs::read_to_string(log).unwrap_or_default(),
    );
    p
}

#[test]
fn ivnsec_supplicant_through_hostapd_to_freeradius_derives_the_msk_freeradius_sent() {
    require_root!();
    require_freeradius!();
    if !have("hostapd") {
        eprintln!("skipped: hostapd is not installed (scripts/setup installs it)");
        return;
    }
    let f = Fixture::new("dot1x-hostapd", &["sensor1"]);
    let tb = pae_testbed(&f.d, 1, true);
    let radius = freeradius(&f, &tb);
    let st = tb.state();
    let consumer = st.node("consumer").unwrap();
    let _h = hostapd(&f, &consumer.namespace, &radius_addr(&tb));
    let s1 = Ecu::new(&tb, &f.d, "sensor1", "10.92.0.1", "eap0");
    let _p1 = s1.up_with(&strs(&supplicant_args(&f, "sensor1")));
    wait_for_or(
        30,
        "EAP-Success through hostapd",
        || !events_named(&s1, "eap_success").is_empty(),
        || format!("{}\n{}", diagnose(&[&s1]), radius.log()),
    );
    let fp = events_named(&s1, "eap_success")[0]["msk_sha256"].clone();
    let sent = radius.sent_msk();
    assert!(
        sent.iter().any(|m| fp == msk_fingerprint(m).as_str()),
        "MSK fingerprint {fp} not among FreeRADIUS's {} MS-MPPE key pairs",
        sent.len()
    );
}

#[test]
fn wpa_supplicant_through_the_ivnsec_authenticator_to_freeradius_succeeds() {
    require_root!();
    require_freeradius!();
    if !have("wpa_supplicant") {
        eprintln!("skipped: wpa_supplicant is not installed (scripts/setup installs it)");
        return;
    }
    let f = Fixture::new("dot1x-wpas", &["sensor1"]);
    let tb = pae_testbed(&f.d, 1, true);
    let radius = freeradius(&f, &tb);
    let auth = Ecu::new(&tb, &f.d, "consumer", "10.91.0.10", "eap0");
    let _pa = auth.up_with(&strs(&authenticator_args(&f, &radius_addr(&tb), &[])));
    let st = tb.state();
    let sensor = st.node("sensor1").unwrap();
    let conf = f.d.path("wpas.conf");
    std::fs::write(
        &conf,
        format!(
            "ap_scan=0\neapol_version=2\nnetwork={{\n key_mgmt=IEEE8021X\n eap=TLS\n \
             identity=\"sensor1\"\n ca_cert=\"{}\"\n client_cert=\"{}\"\n private_key=\"{}\"\n \
             eapol_flags=0\n}}\n",
            f.ca(),
            f.cert("sensor1"),
            f.key("sensor1")
        ),
    )
    .unwrap();
    let mut c = Command::new("ip");
    c.args([
        "netns",
        "exec",
        &sensor.namespace,
        "wpa_supplicant",
        "-D",
        "wired",
        "-i",
        "eth0",
        "-c",
    ])
    .arg(&conf)
    .arg("-dd");
    let log = f.d.path("wpas.log");
    let _w = logged(c, &log, "CTRL-EVENT-EAP-SUCCESS", "wpa_supplicant");
    wait_for_or(
        20,
        "the ivnsec authenticator reports the EAP success",
        || !events_named(&auth, "eap_success").is_empty(),
        || format!("{}\n{}", diagnose(&[&auth]), radius.log()),
    );
}
