//! Known answers and a loopback server for the RADIUS client.
//!
//! The RFC 2865 §7.1 packets are the RFC's own (secret "xyzzy5461"). The other vectors come from
//! the independent reference `tests/interop/radius_ref.py` (Python standard library only):
//! `python3 tests/interop/radius_ref.py` prints them.

use super::*;
use std::net::UdpSocket;

const RFC2865_REQUEST: &str = "0100003 80f403f9473978057bd83d5cb98f4227a01066e656d6f02120dbe708d93d413ce3196e43f782a0aee0406c0a8011005060000000 3";
const RFC2865_ACCEPT: &str =
    "0200002686fe220e7624ba2a1005f6bf9b55e0b20606000000010f06000000000e06c0a80103";

const REF_SECRET: &[u8] = b"ivnsec-testing-123";
const REF_REQ_AUTH: [u8; 16] = [
    0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f,
];
const REF_REQUEST: &str = "012a0074101112131415161718191a1b1c1d1e1f01066563753120056777300606000000023d060000000f0c06000005781e1330322d30302d30302d30302d30302d30311f1330322d30302d30302d30302d30302d30324f0b0201000901656375315012018debe711db83e3898aa61e969b67dd";
const REF_CHALLENGE: &str = "0b2a01627e3408b67b881fb3a849efe595a9cc95180c73746174652d303132334fff0102012c0d20000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9fa0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedfe0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f64f31f7f8f9fa000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a501249dd11c91f0bbfff95dcde255e7ce6a0";
const REF_ACCEPT: &str = "022a00e9de92b9a96c33420f98514927be8f25be1a3a000001371134800190c6af016e7642799355471fa3e2d4f4cb449f7e1863056de46b8d192ea4dae7bad787ead132f050def699a8ce93f4761a3a0000013710348002bd5350cdaa7e95243c1c0d57f2093d30fa8e1c34f7840a8ccdb5c60fcc0b05207134bc179993ee58674672efeee1199b4f060302000466430d000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000001b0600000e105012ed8026f6a6b440ec9a1c027588f56301";
const REF_MSK: &str = "3edeaabc67bf91e7a359a904f98f75248f0495180c27af5a41de2cf07bc906f7d2f7c485539999c0fb7fd78d9e7aed7f09c453eaa7b9c8c4ccf4cccea2981b44";

fn unhex(s: &str) -> Vec<u8> {
    hex::decode(s.replace(' ', "")).unwrap()
}

#[test]
fn rfc2865_response_authenticator() {
    let req = unhex(RFC2865_REQUEST);
    let req = Packet::new_checked(&req).unwrap();
    let resp = unhex(RFC2865_ACCEPT);
    let p = Packet::new_checked(&resp).unwrap();
    let ra = response_authenticator(&p, &req.authenticator(), b"xyzzy5461");
    assert_eq!(ra, p.authenticator());
    // No EAP-Message, no Message-Authenticator: accepted without one.
    let (a, state) = check_response(&resp, &req.authenticator(), b"xyzzy5461").unwrap();
    assert!(matches!(a, RadiusAnswer::Accept { msk: None, .. }));
    assert!(state.is_none());
    assert_eq!(
        check_response(&resp, &req.authenticator(), b"xyzzy5462").err(),
        Some(ResponseDrop::BadResponseAuthenticator)
    );
}

fn ref_client(server: SocketAddr) -> RadiusClient {
    let mut cfg = RadiusConfig::new(server, Zeroizing::new(REF_SECRET.to_vec()), "gw0");
    cfg.timeout = Duration::from_millis(50);
    RadiusClient::new(cfg).unwrap()
}

const SUPP: [u8; 6] = [2, 0, 0, 0, 0, 2];
const AUTH: [u8; 6] = [2, 0, 0, 0, 0, 1];
const EAP_IDENTITY: &[u8] = b"\x02\x01\x00\x09\x01ecu1";

#[test]
fn request_matches_reference() {
    let c = ref_client("127.0.0.1:1812".parse().unwrap());
    let req = AccessRequest {
        supplicant: SUPP,
        authenticator: AUTH,
        identity: b"ecu1",
        eap: EAP_IDENTITY,
    };
    let pkt = c.build_request(0x2A, &REF_REQ_AUTH, &req).unwrap();
    assert_eq!(hex::encode(&pkt), REF_REQUEST);
}

#[test]
fn challenge_and_accept_from_reference() {
    let ch = unhex(REF_CHALLENGE);
    let (a, state) = check_response(&ch, &REF_REQ_AUTH, REF_SECRET).unwrap();
    let RadiusAnswer::Challenge { eap } = a else {
        panic!("{a:?}")
    };
    assert_eq!(eap.len(), 300);
    assert_eq!(state.as_deref(), Some(&b"state-0123"[..]));

    let acc = unhex(REF_ACCEPT);
    let (a, _) = check_response(&acc, &REF_REQ_AUTH, REF_SECRET).unwrap();
    let RadiusAnswer::Accept {
        eap,
        msk,
        key_name,
        session_timeout,
    } = a
    else {
        panic!("{a:?}")
    };
    assert_eq!(eap.as_deref(), Some(&[3u8, 2, 0, 4][..]));
    assert_eq!(hex::encode(msk.unwrap().as_slice()), REF_MSK);
    assert_eq!(key_name.unwrap().len(), 65);
    assert_eq!(session_timeout, Some(3600));

    // Our encryption is the inverse and agrees with the reference's ciphertext.
    let msk = unhex(REF_MSK);
    let p = Packet::new_checked(&acc).unwrap();
    let recv = p.vendor_attr(311, 17).unwrap();
    assert_eq!(
        encrypt_mppe_key(&msk[..32], [0x80, 1], REF_SECRET, &REF_REQ_AUTH).unwrap(),
        recv
    );
}

#[test]
fn tampered_responses_are_dropped() {
    let ch = unhex(REF_CHALLENGE);
    // Any octet flipped: the Response Authenticator fails (or the packet is malformed).
    for i in [0usize, 1, 4, 25, 100, ch.len() - 1] {
        let mut t = ch.clone();
        t[i] ^= 1;
        assert!(
            check_response(&t, &REF_REQ_AUTH, REF_SECRET).is_err(),
            "{i}"
        );
    }
    // Message-Authenticator wrong but Response Authenticator recomputed: the MA check catches it.
    let mut t = ch.clone();
    let n = t.len();
    t[n - 1] ^= 1;
    let p = Packet::new_checked(&t).unwrap();
    let ra = response_authenticator(&p, &REF_REQ_AUTH, REF_SECRET);
    t[4..20].copy_from_slice(&ra);
    assert_eq!(
        check_response(&t, &REF_REQ_AUTH, REF_SECRET).err(),
        Some(ResponseDrop::BadMessageAuthenticator)
    );
    // EAP-Message without Message-Authenticator.
    let mut b = Builder::new(CODE_ACCESS_CHALLENGE, 0x2A, &REF_REQ_AUTH);
    b.eap_message(&[1, 2, 0, 6, 13, 0x20]).unwrap();
    let mut t = b.finish();
    let p = Packet::new_checked(&t).unwrap();
    let ra = response_authenticator(&p, &REF_REQ_AUTH, REF_SECRET);
    t[4..20].copy_from_slice(&ra);
    assert_eq!(
        check_response(&t, &REF_REQ_AUTH, REF_SECRET).err(),
        Some(ResponseDrop::MissingMessageAuthenticator)
    );
}

#[test]
fn mppe_bad_keys() {
    let ok = encrypt_mppe_key(&[7; 32], [0x80, 5], b"s", &[0; 16]).unwrap();
    assert_eq!(
        decrypt_mppe_key(&ok, b"s", &[0; 16]).unwrap().as_slice(),
        &[7; 32]
    );
    let mut no_high_bit = ok.clone();
    no_high_bit[0] = 0x00;
    assert!(decrypt_mppe_key(&no_high_bit, b"s", &[0; 16]).is_none());
    assert!(decrypt_mppe_key(&ok[..17], b"s", &[0; 16]).is_none());
    assert!(decrypt_mppe_key(&[0x80, 0], b"s", &[0; 16]).is_none());
    // A length octet beyond the plaintext (wrong secret makes it random; force one).
    let long = encrypt_mppe_key(&[7; 14], [0x80, 5], b"s", &[0; 16]).unwrap();
    let p = {
        let mut l = long.clone();
        // Flip the length octet's ciphertext so it decrypts to 14 ^ 0xF0 = 0xFE.
        l[2] ^= 0xF0;
        l
    };
    assert!(decrypt_mppe_key(&p, b"s", &[0; 16]).is_none());
}

#[test]
fn check_response_never_panics() {
    let mut x: u32 = 7;
    let base = unhex(REF_ACCEPT);
    for n in 0..3000usize {
        let mut t = base.clone();
        for _ in 0..(n % 5 + 1) {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            let i = x as usize % t.len();
            t[i] = (x >> 8) as u8;
        }
        t.truncate(x as usize % (base.len() + 1));
        let _ = check_response(&t, &REF_REQ_AUTH, REF_SECRET);
    }
}

/// Answers with a Challenge carrying State, then checks the State comes back.
#[test]
fn loopback_challenge_state_timeout_and_drops() {
    let server = UdpSocket::bind("127.0.0.1:0").unwrap();
    server
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    let mut c = ref_client(server.local_addr().unwrap());
    let t0 = Instant::now();
    let req = AccessRequest {
        supplicant: SUPP,
        authenticator: AUTH,
        identity: b"ecu1",
        eap: EAP_IDENTITY,
    };
    c.submit(t0, &req).unwrap();
    let mut buf = [0u8; 4096];
    let (n, from) = server.recv_from(&mut buf).unwrap();
    let rq = Packet::new_checked(&buf[..n]).unwrap();
    // Our request's Message-Authenticator verifies independently of the builder.
    let at = wire::message_authenticator_offset(&rq).unwrap();
    let ma = message_authenticator(&rq, &rq.authenticator(), REF_SECRET).unwrap();
    assert_eq!(&buf[at..at + 16], &ma);
    assert_eq!(
        rq.attr(wire::ATTR_CALLING_STATION_ID),
        Some(&b"02-00-00-00-00-02"[..])
    );
    assert_eq!(rq.eap_message().unwrap(), EAP_IDENTITY);

    let answer = |code: u8, id: u8, auth: [u8; 16], state: Option<&[u8]>, secret: &[u8]| {
        let mut b = Builder::new(code, id, &auth);
        if let Some(s) = state {
            b.attr(wire::ATTR_STATE, s).unwrap();
        }
        b.eap_message(&[1, 2, 0, 6, 13, 0x20]).unwrap();
        let at = b.message_authenticator().unwrap();
        let mut v = b.finish();
        let m = hmac_md5(secret, &v);
        v[at..at + 16].copy_from_slice(&m);
        let p = Packet::new_checked(&v).unwrap();
        let ra = response_authenticator(&p, &auth, secret);
        v[4..20].copy_from_slice(&ra);
        v
    };
    // Wrong secret, unknown id, wrong source: dropped.
    let id = rq.identifier();
    let auth = rq.authenticator();
    server
        .send_to(&answer(11, id, auth, None, b"other"), from)
        .unwrap();
    server
        .send_to(
            &answer(11, id.wrapping_add(1), auth, None, REF_SECRET),
            from,
        )
        .unwrap();
    let stranger = UdpSocket::bind("127.0.0.1:0").unwrap();
    stranger
        .send_to(&answer(11, id, auth, None, REF_SECRET), from)
        .unwrap();
    server
        .send_to(&answer(11, id, auth, Some(b"st"), REF_SECRET), from)
        .unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let got = c.poll(t0);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(matches!(got[0].1, RadiusAnswer::Challenge { .. }));
    let k = c.counters();
    assert_eq!(
        (
            k.bad_response_authenticator,
            k.unknown_id,
            k.wrong_source,
            k.challenges
        ),
        (1, 1, 1, 1)
    );
    assert_eq!(c.next_timeout(), None);

    // The next request carries the State; the server stays silent: retransmissions, then Timeout.
    c.submit(t0, &req).unwrap();
    let (n, _) = server.recv_from(&mut buf).unwrap();
    let rq = Packet::new_checked(&buf[..n]).unwrap();
    assert_eq!(rq.attr(wire::ATTR_STATE), Some(&b"st"[..]));
    let first = buf[..n].to_vec();
    let mut now = t0;
    let mut answers = Vec::new();
    for _ in 0..10 {
        now = c.next_timeout().unwrap_or(now);
        answers.extend(c.poll(now));
        if !answers.is_empty() {
            break;
        }
        let (n, _) = server.recv_from(&mut buf).unwrap();
        assert_eq!(&buf[..n], &first[..], "a retransmission is the same packet");
    }
    assert!(matches!(
        answers[..],
        [(SUPP, RadiusAnswer::Timeout { tries: 4 })]
    ));
    assert_eq!(c.counters().retransmitted, 3);
    assert_eq!(c.counters().timeouts, 1);
    assert_eq!(c.next_timeout(), None);
    // The State went with the timeout.
    c.submit(now, &req).unwrap();
    let (n, _) = server.recv_from(&mut buf).unwrap();
    assert!(
        Packet::new_checked(&buf[..n])
            .unwrap()
            .attr(wire::ATTR_STATE)
            .is_none()
    );
    c.forget(SUPP);
    assert_eq!(c.next_timeout(), None);
}

#[test]
fn read_secret_checks() {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("ivnsec-radius-secret-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("secret");
    std::fs::write(&f, "testing123\n").unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
    let e = format!("{:#}", read_secret(&f).unwrap_err());
    assert!(e.contains("chmod 600"), "{e}");
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(read_secret(&f).unwrap().as_slice(), b"testing123");
    std::fs::write(&f, "").unwrap();
    assert!(read_secret(&f).is_err());
    std::fs::write(&f, vec![b'a'; 2000]).unwrap();
    assert!(read_secret(&f).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}
