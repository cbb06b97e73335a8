use super::*;

/// RFC 4106 (GCM): 8-byte ESP header + 8-byte IV + payload + pad to 4 with the 2-byte
/// trailer + 16-byte ICV; RFC 3602 (CBC): 16-byte IV and padding to the 16-byte block. A
/// 1500-byte IPv4 path: GCM → TUN MTU 1446 (a 1446-byte packet: 1446 + 2 = 1448, aligned;
/// 20 + 8 + 8 + 1448 + 16 = 1500); CBC → 1438 (1438 + 2 = 1440 = 90 blocks; 20 + 8 + 16 +
/// 1440 + 16 = 1500).
#[test]
fn tun_mtu_is_the_largest_packet_that_fits_the_path_once_protected() {
    let p = mtu_plan(EspAlg::Aes128Gcm, false, false, 1500).unwrap();
    assert_eq!((p.tun, p.overhead), (1446, 54));
    let p = mtu_plan(EspAlg::Aes128CbcHmacSha256, false, false, 1500).unwrap();
    assert_eq!((p.tun, p.overhead), (1438, 62));
    // IPv6 outer: 20 more; UDP: 8 more (1500 − 40 − 8 − 8 − 8 − 16 = 1420, 1420+2 = 1422
    // not aligned → 1418 + 2 = 1420).
    let p = mtu_plan(EspAlg::Aes128Gcm, true, true, 1500).unwrap();
    assert_eq!(p.tun, 1418);
    // NULL: no IV, alignment 4: 1500 − 20 − 8 − 16 = 1456 = 1454 + 2.
    assert_eq!(
        mtu_plan(EspAlg::NullHmacSha256, false, false, 1500)
            .unwrap()
            .tun,
        1454
    );
    for alg in EspAlg::ALL {
        for (v6, udp) in [(false, false), (true, false), (false, true), (true, true)] {
            let p = mtu_plan(alg, v6, udp, 1500).unwrap();
            let outer = if v6 { 40 } else { 20 } + if udp { 8 } else { 0 };
            assert!(outer + alg.esp_len(p.tun as usize) <= 1500);
            assert!(
                outer + alg.esp_len(p.tun as usize + 1) > 1500,
                "{alg} not largest"
            );
        }
    }
    let e = mtu_plan(EspAlg::Aes128Gcm, false, false, 100).unwrap_err();
    assert_eq!(crate::error::exit_code(&e), 2);
    assert!(e.to_string().contains("no room"), "{e}");
}

#[test]
fn spi_zero_is_refused_and_reserved_spis_pass() {
    let e = check_spi("--tx-spi", 0).unwrap_err();
    assert_eq!(crate::error::exit_code(&e), 2);
    assert!(e.to_string().contains("RFC 4303"), "{e}");
    assert!(check_spi("--rx-spi", 52).is_ok());
    assert!(check_spi("--rx-spi", 0x1000).is_ok());
}
