use std::collections::BTreeMap;

use ivnsec_core::sa::DropReason;

use super::*;

fn ends() -> Ends {
    Ends {
        local_mac: [2, 0x49, 0x56, 0, 1, 1],
        peer_mac: [2, 0x49, 0x56, 0, 0, 1],
        local_ip: Ipv4Addr::new(10, 77, 1, 1),
        peer_ip: Ipv4Addr::new(10, 77, 0, 1),
    }
}

const ATTACKER_MAC: [u8; 6] = [2, 0x49, 0x56, 0, 1, 2];
const ATTACKER_IP: Ipv4Addr = Ipv4Addr::new(10, 77, 1, 2);

/// What the receiver node makes of one Ethernet frame, as its links deliver it: the raw
/// socket sees only the family's EtherType (the plain EtherType / IP protocol goes to the
/// watch socket and counts as `untagged` / `not_esp`); the raw IP socket drops packets
/// from other sources (`foreign_source`) and hands on what follows the IPv4 header.
fn receive(rx: &mut Channel, family: Profile, f: &[u8]) -> Result<(), DropReason> {
    let mut buf = vec![0u8; 4096];
    if family.is_udp() {
        return receive_udp(rx, family, f, &mut buf);
    }
    match family {
        Profile::Esp(_) => {
            let sender = rx.ends().peer_ip;
            if f[12..14] != [8, 0] || f.len() < ESP_AT {
                return Err(DropReason::WrongEtherType);
            }
            if f[ETH + 12..ETH + 16] != sender.octets() {
                return Err(DropReason::ForeignSource);
            }
            // The stack trims to the IPv4 total length.
            let total = usize::from(u16::from_be_bytes([f[ETH + 2], f[ETH + 3]]));
            let end = (ETH + total).min(f.len());
            if f[ETH + 9] != ivnsec_core::wire::ip::protocol::ESP {
                return Err(DropReason::NotEsp);
            }
            let unit = &f[ESP_AT..end];
            let off = rx.rx_offset();
            buf[off..off + unit.len()].copy_from_slice(unit);
            rx.verify(&mut buf, unit.len()).map(|_| ())
        }
        _ => {
            if f[12..14] == ivnsec_core::channel::PAYLOAD_ETHERTYPE.to_be_bytes() {
                return Err(DropReason::Untagged);
            }
            if f[12..14] != family.ethertype().to_be_bytes() {
                return Err(DropReason::WrongEtherType);
            }
            buf[..f.len()].copy_from_slice(f);
            rx.verify(&mut buf, f.len()).map(|_| ())
        }
    }
}

/// The same for the UDP families, whose frames pass the receiving stack first: a datagram
/// must be IPv4/UDP to the family's port with right lengths and checksums (a stack drops
/// anything else before the receiver sees it: that would be a forger bug, so it panics);
/// the SecOC link takes datagrams from the sender's address and port only
/// (`foreign_source`), the SOME/IP link from anyone.
fn receive_udp(
    rx: &mut Channel,
    family: Profile,
    f: &[u8],
    buf: &mut [u8],
) -> Result<(), DropReason> {
    assert!(f.len() >= UDP_AT && f[12..14] == [8, 0], "not IPv4/UDP");
    let ip = &f[ETH..ESP_AT];
    assert_eq!(ip[9], ivnsec_core::wire::ip::protocol::UDP);
    assert_eq!(
        ivnsec_core::wire::ip::internet_checksum(ip),
        0,
        "IPv4 checksum"
    );
    assert_eq!(
        usize::from(u16::from_be_bytes([ip[2], ip[3]])),
        f.len() - ETH
    );
    let udp = &f[ESP_AT..];
    assert_eq!(usize::from(u16::from_be_bytes([udp[4], udp[5]])), udp.len());
    let src = Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]);
    let dst = Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]);
    let mut zeroed = udp.to_vec();
    zeroed[6..8].copy_from_slice(&[0, 0]);
    let sum = ivnsec_core::wire::ip::udp_checksum_v4(src, dst, &zeroed);
    assert_eq!(udp[6..8], sum.to_be_bytes(), "UDP checksum");
    let port = family.udp_port().to_be_bytes();
    assert_eq!(dst, rx.ends().local_ip);
    assert_eq!(udp[2..4], port);
    if matches!(family, Profile::Secoc(_)) && (src != rx.ends().peer_ip || udp[0..2] != port) {
        return Err(DropReason::ForeignSource);
    }
    let unit = &f[UDP_AT..];
    buf[..unit.len()].copy_from_slice(unit);
    rx.verify(buf, unit.len()).map(|_| ())
}

/// A forger and a receiving channel for `profile` (fresh keys), after eight unaltered
/// intercepted frames verified (the positive control).
fn forger_and_receiver(profile: &str) -> (Profile, Forger, Channel) {
    let prov = ProviderChoice::Auto;
    let family: Profile = profile.parse().unwrap();
    let (fwd, back) = (random_keys(family).unwrap(), random_keys(family).unwrap());
    let mut forger =
        Forger::new(family, prov, ends(), &fwd, ATTACKER_MAC, ATTACKER_IP, 64).unwrap();
    let mut rx = open(
        family,
        prov,
        &back,
        &fwd,
        ends().reversed(),
        1,
        ChannelOptions::default(),
    )
    .unwrap();
    let mut f = Vec::new();
    for i in 0..8 {
        forger.intercepted_frame(i, &mut f).unwrap();
        receive(&mut rx, family, &f).unwrap_or_else(|r| panic!("{profile}: control {r}"));
    }
    (family, forger, rx)
}

const PROFILES: [&str; 9] = [
    "aes128-gcm",
    "chacha20-poly1305/auth",
    "hmac-sha256",
    "aes128-cbc-hmac-sha256",
    "macsec-gcm-aes-128",
    "macsec-gcm-aes-xpn-256",
    "esp-aes128-gcm",
    "esp-null-hmac-sha256",
    "esp-aes128-cbc-hmac-sha256",
];

/// Every forged frame of every class is dropped, with a reason that fits the class, while
/// unaltered intercepted frames verify (so the drops come from the alteration, not from a
/// wrong setup).
#[test]
fn every_forged_frame_is_dropped_and_intercepted_frames_verify() {
    for profile in PROFILES {
        let (family, mut forger, mut rx) = forger_and_receiver(profile);
        let mut f = Vec::new();
        for attack in Attack::ALL.into_iter().filter(|a| !a.is_replay()) {
            let mut reasons = std::collections::BTreeMap::new();
            for i in 0..400 {
                forger.forge(attack, i, &mut f).unwrap();
                let r = receive(&mut rx, family, &f)
                    .err()
                    .unwrap_or_else(|| panic!("{profile} {}: frame {i} accepted", attack.name()));
                *reasons.entry(r.name()).or_insert(0u32) += 1;
            }
            let has = |r: &str| reasons.contains_key(r);
            match attack {
                Attack::ForeignSource => assert!(
                    has("bad_tag") || has("no_sci") || has("foreign_source"),
                    "{profile}: {reasons:?}"
                ),
                Attack::NoKey => assert_eq!(reasons.len(), 1, "{profile}: {reasons:?}"),
                Attack::BitFlip => assert!(has("bad_tag"), "{profile}: {reasons:?}"),
                Attack::Downgrade => {
                    assert!(has("untagged") || has("not_esp"), "{profile}: {reasons:?}")
                }
                Attack::UnknownId => assert!(
                    has("unknown_sa") || has("no_sci") || has("not_using_sa"),
                    "{profile}: {reasons:?}"
                ),
                _ => {}
            }
            if attack == Attack::NoKey {
                assert!(has("bad_tag"), "{profile}: {reasons:?}");
            }
        }
        // The receiver still accepts the legitimate stream afterwards.
        forger.intercepted_frame(99, &mut f).unwrap();
        receive(&mut rx, family, &f).unwrap_or_else(|r| panic!("{profile}: after {r}"));
    }
}

/// The receiver's drop reasons for the replays a [`ReplayPicker`] picks (two per legitimate
/// frame, once it has enough) from a stream of `frames` legitimate frames of `profile`,
/// against replay window `window`; every legitimate frame must verify.
fn replay_reasons(profile: &str, window: u32, frames: u64) -> BTreeMap<&'static str, u32> {
    let prov = ProviderChoice::Auto;
    let family: Profile = profile.parse().unwrap();
    let (fwd, back) = (random_keys(family).unwrap(), random_keys(family).unwrap());
    let mut tx = open(
        family,
        prov,
        &fwd,
        &back,
        ends(),
        0,
        ChannelOptions::default(),
    )
    .unwrap();
    let opts = ChannelOptions {
        replay_window: window,
        first_seq: 1,
        spi_offset: 0,
    };
    let mut rx = open(family, prov, &back, &fwd, ends().reversed(), 1, opts).unwrap();
    let mut picker = ReplayPicker::new(window);
    let (mut unit, mut f) = (vec![0u8; 2048], Vec::new());
    let mut reasons = BTreeMap::new();
    for i in 0..frames {
        let n = tx.protect(&i.to_be_bytes(), &mut unit).unwrap();
        tx.capture_frame(&unit[..n], true, &mut f);
        assert!(is_legit_forward(family, &ends(), &f));
        receive(&mut rx, family, &f).unwrap();
        picker.push(&f);
        for j in 0..2 {
            if let Some(r) = picker.pick(i * 2 + j) {
                let r = receive(&mut rx, family, r).unwrap_err();
                *reasons.entry(r.name()).or_insert(0u32) += 1;
            }
        }
    }
    assert_eq!(
        reasons.values().sum::<u32>(),
        (2 * frames - u64::from(window + 2)) as u32,
        "{profile} w{window}: every replay judged: {reasons:?}"
    );
    reasons
}

/// A frame captured again (the attacker's own replay seen by a capture socket of every
/// EtherType on its host) is not recorded twice: the newest stays the newest legitimate
/// frame and the older pick stays left of the window.
#[test]
fn picker_ignores_a_frame_seen_again() {
    let mut p = ReplayPicker::new(1);
    for i in 0u8..4 {
        assert!(p.push(&[i; 20]));
    }
    assert!(!p.push(&[3; 20]), "the newest again");
    assert!(!p.push(&[0; 20]), "an old one again");
    assert_eq!(p.captured(), 4);
    assert_eq!(p.pick(0), Some(&[3u8; 20][..]));
    assert_eq!(p.pick(1), Some(&[0u8; 20][..]));
}

/// Replays picked from a captured stream are refused: duplicates of the newest and frames
/// left of the window, for windows 1 and 1024.
#[test]
fn replays_are_duplicates_or_too_old() {
    for profile in ["aes128-gcm", "macsec-gcm-aes-128", "esp-aes128-gcm"] {
        for window in [1u32, 1024] {
            let reasons = replay_reasons(profile, window, 3000);
            assert!(
                reasons.contains_key("replay_duplicate"),
                "{profile} w{window}: {reasons:?}"
            );
            let old = if profile.starts_with("macsec-") {
                "late"
            } else {
                "replay_too_old"
            };
            assert!(
                reasons.contains_key(old) || reasons.contains_key("replay_too_old"),
                "{profile} w{window}: {reasons:?}"
            );
        }
    }
}

const UDP_PROFILES: [&str; 5] = [
    "secoc-cmac-aes128",
    "secoc-hmac-sha256",
    "someip-aes128-gcm/conf",
    "someip-aes128-ccm/conf",
    "someip-chacha20-poly1305/auth",
];

/// The drop reasons each class may produce against a UDP family, and those it must
/// produce in 400 frames, from the protocol rules (docs/secoc.md, docs/wire-someip-sec.md):
///
/// SecOC (one PDU per datagram: PDU id = Data ID, length, Secured I-PDU with a 32-bit
/// truncated FV and a 64-bit MAC; default acceptance window 2^32, so every reconstructed FV
/// is inside it and a wrong one shows as a MAC mismatch):
/// - foreign source: the socket connection takes the sender's address only;
/// - no key, downgrades (an Authentic I-PDU without authentication information has its last
///   12 bytes read as FV and MAC; a 24-bit MAC shifts the FV into the payload) and flips of
///   FV, payload and MAC: `bad_tag`;
/// - a flipped PDU id: no I-PDU with that id (`unknown_sa`); a flipped or wrong length
///   field, a cut or an extension: `bad_length` (shorter than the PDU header: `truncated`);
///   a consistent cut: `bad_tag`;
/// - garbage: `truncated` / `bad_length` (a random length field), `unknown_sa`.
///
/// SOME/IP (header authenticated; kid, counter, replay window before the tag):
/// - a changed service ID: `unknown_service`; key id: `unknown_sa`; protocol version:
///   `bad_version`; message type: `bad_message_type`, `fragment` (TP flag) or `bad_tag`;
///   Length: `truncated` (longer than the bytes) / `bad_length`; counter: `bad_tag`, or a
///   counter left of the window / already seen / 0: `replay_too_old`, `replay_duplicate`,
///   `bad_seq`; anything else (method, client, session, body, tag): `bad_tag`;
/// - downgrade to nosec: a payload shorter than the 25 security bytes `level_mismatch`, a
///   whole one has the forged id's top byte (0x80) where the key id is: `unknown_sa`;
///   conf → auth form: `bad_tag`.
fn udp_expectations(family: Profile, attack: Attack) -> (Vec<&'static str>, Vec<&'static str>) {
    let secoc = matches!(family, Profile::Secoc(_));
    let conf = matches!(family, Profile::Someip(p) if p.level == SomeipLevel::Conf);
    let sip_header = [
        "bad_tag",
        "unknown_service",
        "bad_length",
        "truncated",
        "bad_version",
        "bad_message_type",
        "fragment",
        "unknown_sa",
        "bad_seq",
        "replay_too_old",
        "replay_duplicate",
    ];
    match (secoc, attack) {
        (true, Attack::ForeignSource) => (vec!["foreign_source"], vec!["foreign_source"]),
        (_, Attack::NoKey) | (true, Attack::Downgrade) => (vec!["bad_tag"], vec!["bad_tag"]),
        (false, Attack::ForeignSource) => (vec!["bad_tag"], vec!["bad_tag"]),
        (true, Attack::BitFlip) => (
            vec!["unknown_sa", "bad_length", "bad_tag"],
            vec!["unknown_sa", "bad_length", "bad_tag"],
        ),
        (true, Attack::Length) => (
            vec!["truncated", "bad_length", "bad_tag"],
            vec!["bad_length", "bad_tag"],
        ),
        (true, Attack::UnknownId) => (vec!["unknown_sa"], vec!["unknown_sa"]),
        (true, _) => (
            vec!["truncated", "bad_length", "unknown_sa", "bad_tag"],
            vec!["bad_length"],
        ),
        (false, Attack::BitFlip) => (
            sip_header.to_vec(),
            vec!["bad_tag", "unknown_service", "unknown_sa"],
        ),
        (false, Attack::Length) => (
            vec!["truncated", "bad_length", "bad_tag", "level_mismatch"],
            vec!["truncated", "bad_length", "bad_tag"],
        ),
        (false, Attack::Downgrade) if conf => (
            vec!["level_mismatch", "unknown_sa", "bad_tag"],
            vec!["level_mismatch", "unknown_sa", "bad_tag"],
        ),
        (false, Attack::Downgrade) => (
            vec!["level_mismatch", "unknown_sa"],
            vec!["level_mismatch", "unknown_sa"],
        ),
        (false, Attack::UnknownId) => (
            vec!["unknown_service", "unknown_sa"],
            vec!["unknown_service", "unknown_sa"],
        ),
        (false, _) => (sip_header.to_vec(), vec!["truncated"]),
    }
}

/// SecOC and secured SOME/IP: every forged frame of every class is dropped with a reason
/// the protocol rules give for it (`udp_expectations`), every frame is a datagram the
/// receiving stack accepts (right lengths and checksums), unaltered intercepted frames
/// verify, and the legitimate stream still verifies afterwards.
#[test]
fn udp_families_drop_every_forged_frame_for_the_protocol_reason() {
    for profile in UDP_PROFILES {
        let (family, mut forger, mut rx) = forger_and_receiver(profile);
        let mut f = Vec::new();
        for attack in Attack::ALL.into_iter().filter(|a| !a.is_replay()) {
            let mut reasons = std::collections::BTreeMap::new();
            for i in 0..400 {
                forger.forge(attack, i, &mut f).unwrap();
                let r = receive(&mut rx, family, &f)
                    .err()
                    .unwrap_or_else(|| panic!("{profile} {}: frame {i} accepted", attack.name()));
                *reasons.entry(r.name()).or_insert(0u32) += 1;
            }
            let (allowed, required) = udp_expectations(family, attack);
            for r in reasons.keys() {
                assert!(
                    allowed.contains(r),
                    "{profile} {}: unexpected {r}: {reasons:?}",
                    attack.name()
                );
            }
            for r in required {
                assert!(
                    reasons.contains_key(r),
                    "{profile} {}: no {r}: {reasons:?}",
                    attack.name()
                );
            }
        }
        forger.intercepted_frame(99, &mut f).unwrap();
        receive(&mut rx, family, &f).unwrap_or_else(|r| panic!("{profile}: after {r}"));
    }
}

/// The negative control: `someip-nosec` protects nothing, so the receiver accepts every
/// no-key forgery and every tampered body — the checks above would see an acceptance.
#[test]
fn someip_nosec_accepts_forgeries() {
    let prov = ProviderChoice::Auto;
    let profile = "someip-nosec";
    let family: Profile = profile.parse().unwrap();
    let k = random_keys(family).unwrap();
    let mut forger = Forger::new(family, prov, ends(), &k, ATTACKER_MAC, ATTACKER_IP, 64).unwrap();
    let mut rx = open(
        family,
        prov,
        &k,
        &k,
        ends().reversed(),
        1,
        ChannelOptions::default(),
    )
    .unwrap();
    let mut f = Vec::new();
    for i in 0..50 {
        forger.forge(Attack::NoKey, i, &mut f).unwrap();
        assert_eq!(receive(&mut rx, family, &f), Ok(()));
        // Flips in the body (i % 5 == 3) go through.
        forger.forge(Attack::BitFlip, i * 5 + 3, &mut f).unwrap();
        assert_eq!(receive(&mut rx, family, &f), Ok(()));
    }
}

/// Replays of captured legitimate datagrams: SOME/IP refuses duplicates and counters left
/// of its replay window (1 or 1024); SecOC, which has no replay window, refuses them
/// because a replayed PDU's 32-bit truncated FV is not above the last accepted FV's low
/// bits, so it reconstructs to that FV + 2^32 (inside the default acceptance window), whose
/// MAC does not match: `bad_tag`.
#[test]
fn udp_family_replays_are_refused() {
    for (profile, want) in [
        ("secoc-cmac-aes128", &["bad_tag"][..]),
        (
            "someip-aes128-gcm/conf",
            &["replay_duplicate", "replay_too_old"][..],
        ),
    ] {
        for window in [1u32, 1024] {
            let reasons = replay_reasons(profile, window, 1500);
            assert_eq!(
                reasons.keys().copied().collect::<Vec<_>>(),
                want,
                "{profile} w{window}: {reasons:?}"
            );
        }
    }
}

/// Group (I/G bit set: multicast, broadcast) and all-zero source addresses are refused by a
/// switch; unicast ones, locally administered included, are forwarded.
#[test]
fn switch_refuses_group_and_zero_sources() {
    let frame = |src: [u8; 6]| {
        let mut f = vec![0u8; 60];
        f[..6].copy_from_slice(&ends().peer_mac);
        f[6..12].copy_from_slice(&src);
        f
    };
    for src in [
        [0x01, 0x00, 0x5e, 0x00, 0x00, 0x01],
        [0xff; 6],
        [0x03, 0x49, 0x56, 0x00, 0x01, 0x01],
        [0; 6],
    ] {
        assert!(switch_refuses(&frame(src)), "{src:02x?}");
    }
    for src in [ends().local_mac, ATTACKER_MAC, [0x00, 0x1b, 0x21, 0, 0, 1]] {
        assert!(!switch_refuses(&frame(src)), "{src:02x?}");
    }
    assert!(!switch_refuses(&frame([0xff; 6])[..11]));
}
