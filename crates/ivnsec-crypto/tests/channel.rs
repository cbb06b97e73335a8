//! The secured channel of `ivnsec_core::channel` on the providers this crate links: first
//! sequence numbers, MACsec integrity only, the key transfer encoding, and refusal of keys that
//! do not fit the profile.

use std::net::Ipv4Addr;

use ivnsec_core::channel::{Channel, ChannelError, ChannelOptions, DirectionKeys, Ends};
use ivnsec_core::profile::Profile;
use ivnsec_crypto::{PORTABLE, PROVIDERS, ProviderChoice, select};

fn ends() -> Ends {
    Ends {
        local_mac: [2, 0, 0, 0, 0, 1],
        peer_mac: [2, 0, 0, 0, 0, 2],
        local_ip: Ipv4Addr::new(10, 0, 0, 1),
        peer_ip: Ipv4Addr::new(10, 0, 0, 2),
    }
}

fn keys(p: Profile) -> DirectionKeys {
    DirectionKeys::random(p, PORTABLE.rng).unwrap()
}

/// The outbound SA starts at the configured number in every family, and the peer accepts it.
#[test]
fn first_sequence_number_is_honoured() {
    for name in ["aes128-gcm", "macsec-gcm-aes-128", "esp-aes128-gcm"] {
        let profile: Profile = name.parse().unwrap();
        for prov in PROVIDERS
            .iter()
            .filter(|p| ivnsec_core::crypto::has_all(p, &profile.primitives()))
        {
            let (f, b) = (keys(profile), keys(profile));
            let opts = ChannelOptions {
                replay_window: 1,
                first_seq: 1 << 20,
                spi_offset: 0,
            };
            let mut a = Channel::with_options(profile, prov, &f, &b, ends(), 0, opts).unwrap();
            let mut z = Channel::new(profile, prov, &b, &f, ends().reversed(), 1).unwrap();
            assert_eq!(a.next_seq(), Some(1 << 20), "{name}");
            assert_eq!(a.profile().is_ip(), name.starts_with("esp-"));
            let mut buf = vec![0u8; Channel::buffer_len(64)];
            let n = a.protect(&[7u8; 64], &mut buf).unwrap();
            assert_eq!(a.next_seq(), Some((1 << 20) + 1), "{name}");
            let off = z.rx_offset();
            let mut rx = vec![0u8; Channel::buffer_len(64)];
            rx[off..off + n].copy_from_slice(&buf[..n]);
            let r = z.verify(&mut rx, n).unwrap();
            assert_eq!(&rx[r], &[7u8; 64][..], "{name} on {}", prov.name);
        }
    }
}

/// `/auth` sends MACsec integrity only (802.1AE §9.5: TCI E = C = 0, user data in clear),
/// `/conf` and the bare name confidentiality (E = C = 1); each peer verifies every one.
#[test]
fn macsec_auth_is_integrity_only() {
    let payload = [0x5au8; 48];
    for (name, conf) in [
        ("macsec-gcm-aes-128/auth", false),
        ("macsec-gcm-aes-128/conf", true),
        ("macsec-gcm-aes-128", true),
    ] {
        let profile: Profile = name.parse().unwrap();
        let prov = select(ProviderChoice::Auto, profile).unwrap();
        let (f, b) = (keys(profile), keys(profile));
        let mut a = Channel::new(profile, prov, &f, &b, ends(), 0).unwrap();
        let mut z = Channel::new(profile, prov, &b, &f, ends().reversed(), 1).unwrap();
        let mut buf = vec![0u8; Channel::buffer_len(payload.len())];
        let n = a.protect(&payload, &mut buf).unwrap();
        // Ethernet header (12) + EtherType 0x88E5, then the TCI/AN octet.
        assert_eq!(&buf[12..14], &[0x88, 0xe5], "{name}");
        assert_eq!(buf[14] & 0x0c, if conf { 0x0c } else { 0 }, "{name}");
        let clear = buf[..n].windows(payload.len()).any(|w| w == payload);
        assert_eq!(clear, !conf, "{name}");
        let off = z.rx_offset();
        let mut rx = vec![0u8; Channel::buffer_len(payload.len())];
        rx[off..off + n].copy_from_slice(&buf[..n]);
        let r = z.verify(&mut rx, n).unwrap();
        assert_eq!(&rx[r], &payload[..], "{name}");
    }
    assert!("macsec-gcm-aes-128/none".parse::<Profile>().is_err());
}

/// Keys travel to child processes as bytes; the encoding round-trips for every profile and
/// rejects truncated or oversized input without panicking.
#[test]
fn key_bytes_round_trip_and_reject_garbage() {
    for p in Profile::all() {
        let k = keys(p);
        let b = k.to_bytes();
        let (back, used) = DirectionKeys::from_bytes(&b).unwrap();
        assert_eq!(used, b.len());
        assert_eq!(
            (back.key(), back.mac_key(), back.iv()),
            (k.key(), k.mac_key(), k.iv()),
            "{p}"
        );
        for cut in 0..b.len() {
            assert!(
                DirectionKeys::from_bytes(&b[..cut]).is_none(),
                "{p} cut {cut}"
            );
        }
    }
    assert!(DirectionKeys::from_bytes(&[65; 200]).is_none());
    // Debug never shows key bytes.
    let k = DirectionKeys::new(&[0xAB; 16], &[], [0xCD; 12]);
    let d = format!("{k:?}");
    assert!(
        !d.contains("171") && !d.to_lowercase().contains("ab,"),
        "{d}"
    );
}

/// Keys of the wrong length are a configuration error naming the part, never a panic.
#[test]
fn keys_that_do_not_fit_are_refused() {
    let p: Profile = "aes128-cbc-hmac-sha256".parse().unwrap();
    let good = keys(p);
    let short = DirectionKeys::new(&[1; 15], good.mac_key(), *good.iv());
    let e = Channel::new(p, PORTABLE, &short, &good, ends(), 0).unwrap_err();
    assert!(matches!(e, ChannelError::Config(_)), "{e}");
    assert!(
        e.to_string().contains("`key` must be 16 bytes, got 15"),
        "{e}"
    );
    let no_mac = DirectionKeys::new(good.key(), &[], *good.iv());
    let e = Channel::new(p, PORTABLE, &good, &no_mac, ends(), 0).unwrap_err();
    assert!(
        e.to_string().contains("`mac_key` must be 32 bytes, got 0"),
        "{e}"
    );
}

/// `protect_frame` puts an ESP unit in the whole frame it travels in: the same bytes as
/// `protect` gives (same keys, same sequence number) behind the Ethernet and IPv4 headers
/// `capture_frame` writes — a well-formed IPv4 header (version 4, IHL 5, protocol 50, total
/// length and header checksum right) — and the peer verifies the packet. Other families' units
/// are the same as `protect`'s.
#[test]
fn esp_frames_for_a_raw_ethernet_sender() {
    for name in ["esp-null-hmac-sha256", "esp-aes128-gcm", "aes128-gcm"] {
        let profile: Profile = name.parse().unwrap();
        let prov = select(ProviderChoice::Auto, profile).unwrap();
        let (f, b) = (keys(profile), keys(profile));
        let mut a = Channel::new(profile, prov, &f, &b, ends(), 0).unwrap();
        let mut a2 = Channel::new(profile, prov, &f, &b, ends(), 0).unwrap();
        let mut z = Channel::new(profile, prov, &b, &f, ends().reversed(), 1).unwrap();
        let payload = [0x3cu8; 1000];
        let mut frame = vec![0u8; Channel::buffer_len(payload.len())];
        let n = a.protect_frame(&payload, &mut frame).unwrap();
        let mut unit = vec![0u8; Channel::buffer_len(payload.len())];
        let u = a2.protect(&payload, &mut unit).unwrap();
        let mut want = Vec::new();
        a2.capture_frame(&unit[..u], true, &mut want);
        assert_eq!(&frame[..n], &want[..], "{name}");
        if !profile.is_ip() {
            continue;
        }
        let ip = &frame[14..n];
        assert_eq!(&frame[12..14], &[0x08, 0x00]);
        assert_eq!((ip[0], ip[9]), (0x45, 50), "{name}");
        assert_eq!(usize::from(u16::from_be_bytes([ip[2], ip[3]])), ip.len());
        // The one's-complement sum of a correct header, checksum included, is 0xffff.
        let mut sum: u32 = ip[..20]
            .chunks(2)
            .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
            .sum();
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        assert_eq!(sum, 0xffff, "{name}");
        // The receiver gets what follows the IPv4 header.
        let esp = &frame[34..n];
        let off = z.rx_offset();
        let mut rx = vec![0u8; Channel::buffer_len(payload.len())];
        rx[off..off + esp.len()].copy_from_slice(esp);
        let r = z.verify(&mut rx, esp.len()).unwrap();
        assert_eq!(&rx[r], &payload[..], "{name}");
    }
}
