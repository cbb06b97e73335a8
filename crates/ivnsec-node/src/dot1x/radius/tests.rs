//! Known answers from RFC 2865 §7.1 and from tests/interop/radius_ref.py (an independent
//! implementation with Python's hashlib and hmac), the refusals, and the timers over loopback.

use super::*;

fn client(server: SocketAddr, secret: &[u8]) -> RadiusClient {
    RadiusClient::new(RadiusConfig {
        server,
        secret: Zeroizing::new(secret.to_vec()),
        nas_identifier: "test".into(),
        timeout: Duration::from_millis(50),
        retries: 3,
        framed_mtu: 1400,
    })
    .unwrap()
}

fn expect(c: &mut RadiusClient, id: u8, request_auth: [u8; 16], supplicant: [u8; 6]) {
    c.in_flight.insert(
        id,
        InFlight {
            supplicant,
            packet: Vec::new(),
            request_auth,
            sent: 1,
            due: Instant::now() + Duration::from_secs(60),
        },
    );
}

fn h(s: &str) -> Vec<u8> {
    hex::decode(s.replace(' ', "")).unwrap()
}

const SERVER: &str = "127.0.0.1:1812";

#[test]
fn rfc2865_example_access_accept_verifies() {
    // RFC 2865 7.1: shared secret "xyzzy5461", the Access-Request's authenticator, and the
    // server's Access-Accept (identifier 0).
    let server: SocketAddr = SERVER.parse().unwrap();
    let mut c = client(server, b"xyzzy5461");
    let req_auth: [u8; 16] = h("0f403f9473978057bd83d5cb98f4227a").try_into().unwrap();
    let accept =
        h("02000026 86fe220e7624ba2a1005f6bf9b55e0b2 06060000000 1 0f0600000000 0e06c0a80103");
    expect(&mut c, 0, req_auth, [2; 6]);
    let (sup, a) = c.answer(server, &accept).unwrap();
    assert_eq!(sup, [2; 6]);
    assert!(
        matches!(
            a,
            RadiusAnswer::Accept {
                msk: None,
                eap: None,
                ..
            }
        ),
        "{a:?}"
    );
    // One octet changed: the Response Authenticator no longer verifies.
    let mut bad = accept.clone();
    bad[25] ^= 1;
    expect(&mut c, 0, req_auth, [2; 6]);
    assert_eq!(
        c.answer(server, &bad).unwrap_err(),
        RadiusDrop::BadResponseAuthenticator
    );
    // The right packet from another address, or for no request in flight.
    assert_eq!(
        c.answer("127.0.0.2:1812".parse().unwrap(), &accept)
            .unwrap_err(),
        RadiusDrop::WrongSource
    );
    c.in_flight.clear();
    assert_eq!(
        c.answer(server, &accept).unwrap_err(),
        RadiusDrop::UnknownId
    );
}

/// Printed by `python3 tests/interop/radius_ref.py`.
const REF_ACCEPT: &str = "022a00a0ef4fba4fda46f5082b68d7447ae550cc4f06030900041a3a0000013711348001e574282e366f5904b8b9ff6590663479df2f572c3bfa87503b0d93da4f21ce6ca5e18191335d587baf10b5d7b7e421901a3a00000137103480025a50da5da4a0f0a44a1b7f723c12f967e75d4a83726e07c71efd9f137f9e5c098c952fc7953c07021ef16d54d8d66eed50126c64507ce409d980c467e010734db4cf";
const REF_SECRET: &[u8] = b"testing123-ivnsec";

fn ref_request_auth() -> [u8; 16] {
    let mut a = [0u8; 16];
    for (i, b) in a.iter_mut().enumerate() {
        *b = 0x10 + i as u8;
    }
    a
}

#[test]
fn reference_accept_gives_the_msk_from_the_mppe_keys() {
    let server: SocketAddr = SERVER.parse().unwrap();
    let mut c = client(server, REF_SECRET);
    expect(&mut c, 42, ref_request_auth(), [7; 6]);
    let (_, a) = c.answer(server, &h(REF_ACCEPT)).unwrap();
    let RadiusAnswer::Accept { eap, msk, .. } = a else {
        panic!("{a:?}")
    };
    assert_eq!(eap.unwrap(), [3, 9, 0, 4]);
    let want: Vec<u8> = (0x40..0x80).collect();
    assert_eq!(msk.unwrap().to_vec(), want, "MSK = Recv-Key ‖ Send-Key");
    assert_eq!(c.counters().accepts, 1);
    // Our encryption is the reference's (same salt, same key).
    let recv: Vec<u8> = (0x40..0x60).collect();
    assert_eq!(
        hex::encode(encrypt_mppe_key(
            REF_SECRET,
            &ref_request_auth(),
            [0x80, 1],
            &recv
        )),
        "8001e574282e366f5904b8b9ff6590663479df2f572c3bfa87503b0d93da4f21ce6ca5e18191335d587baf10b5d7b7e42190"
    );
}

#[test]
fn a_wrong_message_authenticator_or_none_with_eap_is_dropped() {
    let server: SocketAddr = SERVER.parse().unwrap();
    // Another secret: the Response Authenticator fails first.
    let mut c = client(server, b"another secret");
    expect(&mut c, 42, ref_request_auth(), [7; 6]);
    assert_eq!(
        c.answer(server, &h(REF_ACCEPT)).unwrap_err(),
        RadiusDrop::BadResponseAuthenticator
    );
    // A Message-Authenticator that does not verify, with a Response Authenticator that does
    // (a forger who knows the secret's MD5 use but not... : built here by recomputing the
    // Response Authenticator over the altered attribute).
    let mut pkt = h(REF_ACCEPT);
    let p = Packet::parse(&pkt).unwrap();
    let off = p.message_authenticator_offset().unwrap();
    pkt[off] ^= 0xff;
    let ra = md5(&[&pkt[..4], &ref_request_auth(), &pkt[20..], REF_SECRET]);
    pkt[4..20].copy_from_slice(&ra);
    let mut c = client(server, REF_SECRET);
    expect(&mut c, 42, ref_request_auth(), [7; 6]);
    assert_eq!(
        c.answer(server, &pkt).unwrap_err(),
        RadiusDrop::BadMessageAuthenticator
    );
    // EAP without a Message-Authenticator.
    let mut b = Builder::new(code::ACCESS_CHALLENGE, 42, &[0; 16]);
    b.eap_message(&[1, 5, 0, 6, 13, 0x20]).unwrap();
    let mut pkt = b.finish();
    let ra = md5(&[&pkt[..4], &ref_request_auth(), &pkt[20..], REF_SECRET]);
    pkt[4..20].copy_from_slice(&ra);
    expect(&mut c, 42, ref_request_auth(), [7; 6]);
    assert_eq!(
        c.answer(server, &pkt).unwrap_err(),
        RadiusDrop::MissingMessageAuthenticator
    );
    // Garbage.
    assert_eq!(
        c.answer(server, &[2, 42, 0]).unwrap_err(),
        RadiusDrop::Malformed
    );
}

#[test]
fn mppe_keys_that_do_not_decrypt_sanely_are_refused() {
    let ra = ref_request_auth();
    let good = encrypt_mppe_key(REF_SECRET, &ra, [0x80, 1], &[9u8; 32]);
    assert_eq!(
        decrypt_mppe_key(REF_SECRET, &ra, &good).unwrap().to_vec(),
        [9u8; 32]
    );
    // Salt without its high bit, a body not of whole blocks, a length past the end.
    let mut no_bit = good.clone();
    no_bit[0] = 0x01;
    assert!(decrypt_mppe_key(REF_SECRET, &ra, &no_bit).is_none());
    assert!(decrypt_mppe_key(REF_SECRET, &ra, &good[..good.len() - 1]).is_none());
    assert!(decrypt_mppe_key(REF_SECRET, &ra, &good[..2]).is_none());
    let long = encrypt_mppe_key(REF_SECRET, &ra, [0x80, 1], &[9u8; 14]);
    let mut cut = long.clone();
    // Claim 255 octets in a 16-octet block.
    let b1 = md5(&[REF_SECRET, &ra, &long[..2]]);
    cut[2] = 255 ^ b1[0];
    assert!(decrypt_mppe_key(REF_SECRET, &ra, &cut).is_none());
}

#[test]
fn requests_carry_a_valid_message_authenticator_and_state_then_retransmit_and_time_out() {
    let srv = UdpSocket::bind("127.0.0.1:0").unwrap();
    srv.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let server = srv.local_addr().unwrap();
    let mut c = client(server, REF_SECRET);
    let req = AccessRequest {
        supplicant: [2, 0, 0, 0, 0, 1],
        authenticator: [2, 0, 0, 0, 0, 0xaa],
        identity: b"sensor1",
        eap: &[2, 1, 0, 12, 1, b's', b'e', b'n', b's', b'o', b'r', b'1'],
    };
    let t0 = Instant::now();
    c.submit(t0, &req).unwrap();
    let mut buf = [0u8; 4096];
    let (n, from) = srv.recv_from(&mut buf).unwrap();
    let p = Packet::parse(&buf[..n]).unwrap();
    assert_eq!(p.code(), code::ACCESS_REQUEST);
    assert_eq!(p.first(attr::USER_NAME), Some(&b"sensor1"[..]));
    assert_eq!(
        p.first(attr::CALLING_STATION_ID),
        Some(&b"02-00-00-00-00-01"[..])
    );
    assert_eq!(p.eap_message().unwrap(), req.eap);
    // Its Message-Authenticator: HMAC-MD5 over the packet with the value zeroed.
    let off = p.message_authenticator_offset().unwrap();
    let mut z = buf[..n].to_vec();
    z[off..off + 16].fill(0);
    assert_eq!(hmac_md5(REF_SECRET, &[&z]), buf[off..off + 16]);
    // A challenge with a State: the next request carries it.
    let mut b = Builder::new(code::ACCESS_CHALLENGE, p.identifier(), &[0; 16]);
    b.attr(attr::STATE, b"state-1").unwrap();
    b.eap_message(&[1, 2, 0, 6, 13, 0x20]).unwrap();
    let moff = b.message_authenticator().unwrap();
    let mut ans = b.finish();
    let mut signed = ans.clone();
    signed[4..20].copy_from_slice(p.authenticator());
    let ma = hmac_md5(REF_SECRET, &[&signed]);
    ans[moff..moff + 16].copy_from_slice(&ma);
    let ra = md5(&[&ans[..4], p.authenticator(), &ans[20..], REF_SECRET]);
    ans[4..20].copy_from_slice(&ra);
    srv.send_to(&ans, from).unwrap();
    let mut got = Vec::new();
    for _ in 0..100 {
        got = c.poll(Instant::now());
        if !got.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(
        matches!(&got[..], [(_, RadiusAnswer::Challenge { eap })] if eap == &[1, 2, 0, 6, 13, 0x20]),
        "{got:?}"
    );
    c.submit(Instant::now(), &req).unwrap();
    let (n, _) = srv.recv_from(&mut buf).unwrap();
    assert_eq!(
        Packet::parse(&buf[..n]).unwrap().first(attr::STATE),
        Some(&b"state-1"[..])
    );
    // No answer: sent again after each timeout, then Timeout after 3 sends in all.
    let mut answers = Vec::new();
    let t = Instant::now();
    while answers.is_empty() && t.elapsed() < Duration::from_secs(2) {
        answers = c.poll(Instant::now());
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        matches!(&answers[..], [(_, RadiusAnswer::Timeout { tries: 3 })]),
        "{answers:?}"
    );
    assert_eq!(c.counters().retransmissions, 2);
    assert_eq!(c.counters().timeouts, 1);
    let mut resent = 0;
    srv.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    while srv.recv_from(&mut buf).is_ok() {
        resent += 1;
    }
    assert_eq!(resent, 2, "the two retransmissions");
}

#[test]
fn the_secret_file_is_checked() {
    use std::os::unix::fs::PermissionsExt;
    let d = std::env::temp_dir().join(format!("ivnsec-radius-secret-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let f = d.join("s");
    std::fs::write(&f, "sekrit\n").unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert!(format!("{:#}", read_secret(&f).unwrap_err()).contains("chmod 600"));
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(read_secret(&f).unwrap().as_slice(), b"sekrit");
    std::fs::write(&f, "\n").unwrap();
    assert!(format!("{:#}", read_secret(&f).unwrap_err()).contains("empty"));
    let _ = std::fs::remove_dir_all(&d);
}
