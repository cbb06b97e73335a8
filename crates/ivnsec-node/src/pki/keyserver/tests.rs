use super::handshake::source_of;
use super::*;

#[test]
fn requests_parse_and_hostile_lines_are_refused() {
    assert_eq!(
        parse_request(b"{\"op\":\"get\"}\n"),
        Ok(Request::Get { segment: None })
    );
    assert_eq!(
        parse_request(b"{\"op\":\"watch\",\"segment\":\"chassis\"}"),
        Ok(Request::Watch {
            segment: Some("chassis".into())
        })
    );
    for bad in [
        &b""[..],
        b"{}",
        b"[]",
        b"get",
        b"{\"op\":\"put\"}",
        b"{\"op\":\"get\",\"x\":1}",
        b"{\"op\":\"get\",\"segment\":\"../etc\"}",
        b"{\"op\":\"get\",\"segment\":7}",
        b"{\"op\":\"get\"} {\"op\":\"get\"}",
        b"\xff\xfe",
    ] {
        assert!(parse_request(bad).is_err(), "{bad:?}");
    }
    let long = format!(
        "{{\"op\":\"get\",\"segment\":\"{}\"}}",
        "a".repeat(MAX_LINE)
    );
    assert!(
        parse_request(long.as_bytes())
            .unwrap_err()
            .contains("longer")
    );
}

#[test]
fn limits_are_checked_and_sources_group_an_ipv6_64() {
    assert!(Limits::default().check().is_ok());
    for bad in [
        Limits {
            handshake_timeout: Duration::from_millis(50),
            ..Limits::default()
        },
        Limits {
            handshake_timeout: Duration::from_secs(61),
            ..Limits::default()
        },
        Limits {
            max_pending: 0,
            ..Limits::default()
        },
        Limits {
            max_per_address: 0,
            ..Limits::default()
        },
        Limits {
            max_authenticated: 5000,
            ..Limits::default()
        },
    ] {
        let e = bad.check().unwrap_err();
        assert!(format!("{e:#}").contains("choose"), "{bad:?}: {e:#}");
    }
    let ip = |s: &str| s.parse::<std::net::IpAddr>().unwrap();
    assert_eq!(source_of(ip("10.0.0.7")), ip("10.0.0.7"));
    assert_eq!(source_of(ip("::ffff:10.0.0.7")), ip("10.0.0.7"));
    assert_eq!(
        source_of(ip("2001:db8:1:2:aaaa:bbbb:cccc:dddd")),
        source_of(ip("2001:db8:1:2::1"))
    );
    assert_ne!(
        source_of(ip("2001:db8:1:2::1")),
        source_of(ip("2001:db8:1:3::1"))
    );
    assert_eq!(
        lock_path(Path::new("pki/keyserver-state.json")),
        Path::new("pki/keyserver-state.json.lock")
    );
}

#[test]
fn lines_are_read_with_a_bound() {
    let mut buf = Vec::new();
    let mut r: &[u8] = b"{\"op\":\"get\"}\nrest";
    assert_eq!(
        read_line(&mut r, &mut buf).unwrap().unwrap(),
        b"{\"op\":\"get\"}\n"
    );
    assert_eq!(buf, b"rest");
    let big = vec![b'x'; MAX_LINE + 10];
    let mut buf = Vec::new();
    assert!(read_line(&mut &big[..], &mut buf).is_err());
    assert!(buf.len() <= MAX_LINE);
}

#[test]
fn answers_carry_only_well_formed_keys_and_debug_hides_the_cak() {
    let ok = br#"{"ok":true,"push":false,"ecu":"e","keys":[{"segment":"s","number":2,"ckn":"0102","cak":"000102030405060708090a0b0c0d0e0f"}]}"#;
    let Ok(Answer::Keys(k)) = parse_answer(ok) else {
        panic!()
    };
    assert_eq!((k[0].segment.as_str(), k[0].key.number), ("s", 2));
    let dbg = format!("{k:?}");
    assert!(!dbg.contains("0a0b0c"), "{dbg}");
    assert!(dbg.contains("<16 bytes>"), "{dbg}");
    let short = br#"{"ok":true,"keys":[{"segment":"s","number":2,"ckn":"01","cak":"0001"}]}"#;
    assert!(parse_answer(short).is_err());
    assert!(matches!(
        parse_answer(br#"{"ping":true}"#),
        Ok(Answer::Ping)
    ));
    assert!(
        parse_answer(br#"{"ok":false,"error":"revoked"}"#)
            .unwrap_err()
            .contains("revoked")
    );
}
