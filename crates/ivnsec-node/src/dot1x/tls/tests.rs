//! The EAP-TLS engine: client and server in one process (bytes moved in EAP-TLS-sized pieces),
//! both versions, the refusals, and the TLS 1.2 key material against OpenSSL's exporter.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

use ivnsec_net::sys::die_with_parent;

use super::*;
use crate::pki::{self, Algo, Layout};

const VIN: &str = "WVWZZZ1JZXW000001";

struct Pki {
    dir: PathBuf,
}

impl Pki {
    fn new(tag: &str, vin: &str) -> Pki {
        let dir = std::env::temp_dir().join(format!(
            "ivnsec-eaptls-{tag}-{}-{:x}",
            std::process::id(),
            rand_u64()
        ));
        pki::init(&dir, vin, false, Algo::EcdsaP256).unwrap();
        for e in ["radius", "sensor1", "sensor2"] {
            pki::issue(&dir, e, Algo::EcdsaP256, 30).unwrap();
        }
        Pki { dir }
    }
    fn l(&self) -> Layout {
        Layout::new(&self.dir)
    }
    fn settings(&self, ecu: &str, server_name: Option<&str>, versions: Versions) -> EapTlsSettings {
        let l = self.l();
        EapTlsSettings {
            ca: l.ca_pem(),
            cert: l.ecu_pem(ecu),
            key: l.ecu_key(ecu),
            crl: Some(l.crl_pem()),
            server_name: server_name.map(str::to_string),
            versions,
        }
    }
    fn server(&self, ca_of: &Pki, versions: Versions) -> Arc<rustls::ServerConfig> {
        let (l, c) = (self.l(), ca_of.l());
        server_config(
            &c.ca_pem(),
            &l.ecu_pem("radius"),
            &l.ecu_key("radius"),
            Some(&c.crl_pem()),
            versions,
        )
        .unwrap()
    }
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn rand_u64() -> u64 {
    let mut b = [0u8; 8];
    getrandom::fill(&mut b).unwrap();
    u64::from_le_bytes(b)
}

/// Moves records between the two engines in pieces of at most 1000 octets (as EAP-TLS
/// fragments would, reassembled before `read_tls`) until neither has anything to send.
fn converse(c: &mut RustlsEngine, s: &mut RustlsEngine) -> Result<(), TlsFailure> {
    for _ in 0..20 {
        let mut to_s = Vec::new();
        c.write_tls(&mut to_s)?;
        if !to_s.is_empty() {
            s.read_tls(&to_s)?;
        }
        let mut to_c = Vec::new();
        s.write_tls(&mut to_c)?;
        if !to_c.is_empty() {
            c.read_tls(&to_c)?;
        }
        if to_s.is_empty() && to_c.is_empty() {
            return Ok(());
        }
    }
    Err(TlsFailure::Handshake("no end".into()))
}

fn engines(
    client: &EapTlsSettings,
    server: Arc<rustls::ServerConfig>,
) -> (RustlsEngine, RustlsEngine) {
    let c = RustlsEngine::client(
        client_config(client).unwrap(),
        client.server_name.as_deref().unwrap_or(DEFAULT_SERVER_NAME),
    )
    .unwrap();
    (c, RustlsEngine::server(server).unwrap())
}

#[test]
fn both_versions_give_both_sides_the_same_msk_emsk_and_session_id() {
    let p = Pki::new("ok", VIN);
    for (v, want) in [
        (Versions::Tls12Only, TlsVersion::Tls12),
        (Versions::Tls13Only, TlsVersion::Tls13),
        (Versions::Both, TlsVersion::Tls13),
    ] {
        let mut seen = Vec::new();
        for _ in 0..2 {
            let (mut c, mut s) = engines(&p.settings("sensor1", None, v), p.server(&p, v));
            assert!(matches!(c.keys(), Err(TlsFailure::NotFinished)));
            converse(&mut c, &mut s).unwrap();
            assert!(c.is_finished() && s.is_finished(), "{v:?}");
            let (kc, ks) = (c.keys().unwrap(), s.keys().unwrap());
            assert_eq!(kc.version, want);
            assert_eq!(*kc.msk, *ks.msk, "{v:?}");
            assert_eq!(*kc.emsk, *ks.emsk, "{v:?}");
            assert_eq!(kc.session_id, ks.session_id, "{v:?}");
            assert_eq!(kc.session_id.len(), 65);
            assert_eq!(kc.session_id[0], 0x0D);
            assert_ne!(*kc.msk, *kc.emsk);
            assert_eq!(c.peer_names(), ["radius"]);
            assert_eq!(s.peer_names(), ["sensor1"]);
            // Debug shows no key.
            assert!(!format!("{kc:?}").contains(&format!("{:?}", &kc.msk[..4])));
            seen.push(kc.msk.to_vec());
        }
        assert_ne!(seen[0], seen[1], "a new conversation gives new keys");
    }
}

#[test]
fn tls13_client_is_not_finished_before_the_success_indication() {
    let p = Pki::new("ind", VIN);
    let v = Versions::Tls13Only;
    let (mut c, mut s) = engines(&p.settings("sensor1", None, v), p.server(&p, v));
    // ClientHello → server flight → client Finished; the server has not answered yet.
    let mut b = Vec::new();
    c.write_tls(&mut b).unwrap();
    s.read_tls(&b).unwrap();
    b.clear();
    s.write_tls(&mut b).unwrap();
    c.read_tls(&b).unwrap();
    b.clear();
    c.write_tls(&mut b).unwrap();
    assert!(!c.handshaking());
    assert!(!c.is_finished(), "finished without the server's 0x00");
    s.read_tls(&b).unwrap();
    b.clear();
    s.write_tls(&mut b).unwrap();
    c.read_tls(&b).unwrap();
    assert!(c.is_finished());
}

#[test]
fn foreign_revoked_and_misnamed_certificates_are_refused() {
    let p = Pki::new("ref", VIN);
    let other = Pki::new("other", "WVWZZZ1JZXW000002");
    let v = Versions::Both;
    // A client of another CA.
    let (mut c, mut s) = engines(&other.settings("sensor1", None, v), p.server(&p, v));
    let err = converse(&mut c, &mut s).unwrap_err();
    assert!(format!("{err}").contains("TLS"), "{err}");
    // A server of another CA (the client trusts p's CA only).
    let (mut c, mut s) = engines(&p.settings("sensor1", None, v), other.server(&p, v));
    assert!(converse(&mut c, &mut s).is_err());
    // A revoked client.
    pki::revoke(&p.dir, "sensor2").unwrap();
    let (mut c, mut s) = engines(&p.settings("sensor2", None, v), p.server(&p, v));
    let _ = pki::issue(&p.dir, "sensor2", Algo::EcdsaP256, 30);
    assert!(converse(&mut c, &mut s).is_err());
    // The server's name: checked when asked for, any name otherwise.
    let (mut c, mut s) = engines(&p.settings("sensor1", Some("radius"), v), p.server(&p, v));
    converse(&mut c, &mut s).unwrap();
    let (mut c, mut s) = engines(
        &p.settings("sensor1", Some("keyserver"), v),
        p.server(&p, v),
    );
    assert!(converse(&mut c, &mut s).is_err());
    let (mut c, mut s) = engines(&p.settings("sensor1", None, v), p.server(&p, v));
    converse(&mut c, &mut s).unwrap();
    assert!(c.is_finished());
}

fn openssl() -> bool {
    die_with_parent(&mut Command::new("openssl"))
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The key material of a TLS session with `openssl s_server -keymatexport LABEL` (an
/// implementation independent of rustls): TLS 1.2 with RFC 5216's label must equal our
/// MSK ‖ EMSK. For TLS 1.3 the exporter (no context, as openssl's tool exports) is compared;
/// RFC 9190's context 0x0D is checked against FreeRADIUS in the testbed tests.
#[test]
fn key_material_equals_openssls_exporter() {
    if !openssl() {
        eprintln!("skipped: openssl is not installed (scripts/setup installs it)");
        return;
    }
    let p = Pki::new("ossl", VIN);
    let l = p.l();
    for (flag, v, label) in [
        ("-tls1_2", Versions::Tls12Only, "client EAP encryption"),
        (
            "-tls1_3",
            Versions::Tls13Only,
            "EXPORTER_EAP_TLS_Key_Material",
        ),
    ] {
        let port = {
            let s = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            s.local_addr().unwrap().port()
        };
        let mut srv = die_with_parent(&mut Command::new("openssl"))
            .args([
                "s_server",
                "-accept",
                &port.to_string(),
                flag,
                "-naccept",
                "1",
            ])
            .arg("-cert")
            .arg(l.ecu_pem("radius"))
            .arg("-key")
            .arg(l.ecu_key("radius"))
            .arg("-CAfile")
            .arg(l.ca_pem())
            .args([
                "-Verify",
                "1",
                "-keymatexport",
                label,
                "-keymatexportlen",
                "128",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = srv.stdout.take().unwrap();
        let mut lines = BufReader::new(out).lines();
        while let Some(Ok(l)) = lines.next() {
            if l.contains("ACCEPT") {
                break;
            }
        }
        let mut sock = TcpStream::connect(("127.0.0.1", port)).unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut c = RustlsEngine::client(
            client_config(&p.settings("sensor1", None, v)).unwrap(),
            DEFAULT_SERVER_NAME,
        )
        .unwrap();
        while c.handshaking() {
            let mut b = Vec::new();
            c.write_tls(&mut b).unwrap();
            if !b.is_empty() {
                sock.write_all(&b).unwrap();
            }
            if !c.handshaking() {
                break;
            }
            let mut buf = vec![0u8; 16384];
            let n = sock.read(&mut buf).unwrap();
            assert!(n > 0, "openssl closed");
            c.read_tls(&buf[..n]).unwrap();
        }
        let mut b = Vec::new();
        c.write_tls(&mut b).unwrap();
        sock.write_all(&b).unwrap();
        let mut material = None;
        for l in lines.by_ref().map_while(Result::ok) {
            if let Some(h) = l.trim().strip_prefix("Keying material: ") {
                material = Some(h.trim().to_lowercase());
                break;
            }
        }
        let _ = srv.kill();
        let _ = srv.wait();
        let theirs = material.expect("openssl printed no keying material");
        let ours = match v {
            Versions::Tls12Only => {
                let k = c.keys().unwrap();
                let mut m = k.msk.to_vec();
                m.extend_from_slice(&k.emsk[..]);
                hex::encode(m)
            }
            _ => hex::encode(&*c.export_no_context(label.as_bytes(), 128).unwrap()),
        };
        assert_eq!(ours, theirs, "{flag}");
    }
}
