//! The IP packets the ESP tests protect: fixed headers around a payload, checksums filled in.

use ivnsec_core::wire::ip;

/// A 20-byte IPv4 header (192.0.2.1 → 192.0.2.2, TTL 64) for `proto`, then `payload`.
pub fn ipv4(proto: u8, payload: &[u8]) -> Vec<u8> {
    let total = 20 + payload.len();
    let mut p = vec![
        0x45,
        0,
        (total >> 8) as u8,
        total as u8,
        0x12,
        0x34,
        0,
        0,
        64,
        proto,
        0,
        0,
    ];
    p.extend_from_slice(&[192, 0, 2, 1, 192, 0, 2, 2]);
    ip::fill_ipv4_checksum(&mut p[..20]);
    p.extend_from_slice(payload);
    p
}

/// A 40-byte IPv6 header (2001:db8::1 → 2001:db8::2) for `nh`, then `payload`.
pub fn ipv6(nh: u8, payload: &[u8]) -> Vec<u8> {
    let mut p = vec![
        0x60,
        0,
        0,
        0,
        (payload.len() >> 8) as u8,
        payload.len() as u8,
        nh,
        64,
    ];
    let mut a = [0u8; 16];
    a[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
    a[15] = 1;
    p.extend_from_slice(&a);
    a[15] = 2;
    p.extend_from_slice(&a);
    p.extend_from_slice(payload);
    p
}

/// `n` bytes of a fixed pattern (`i · 31 + 7`), a stand-in for a UDP/TCP payload.
pub fn udp_payload(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 31 + 7) as u8).collect()
}
