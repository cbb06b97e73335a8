//! How large the TUN's packets may be: the path MTU less what tunnel mode adds to a packet.

use anyhow::Result;
use ivnsec_core::sa::esp::EspAlg;
use ivnsec_core::wire::ip;

use crate::error::usage;

/// Smallest TUN MTU accepted: the IPv4 minimum (RFC 791).
pub const MIN_TUN_MTU: u32 = 68;
/// Below this TUN MTU the kernel turns IPv6 off on the interface (RFC 8200 §5).
pub const IPV6_MIN_MTU: u32 = 1280;
/// Octets of the UDP header in front of ESP with `--udp-encap`.
pub const UDP_HEADER_LEN: u32 = 8;

/// The MTUs of the path and the TUN, and what the tunnel costs per packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MtuPlan {
    /// Path MTU towards the peer (outer packets).
    pub path: u32,
    /// TUN MTU: the largest inner packet that fits the path once protected.
    pub tun: u32,
    /// `path − tun`: outer IP header (20 or 40), UDP header (8, with encapsulation), ESP header
    /// (8), IV, padding and trailer, ICV (16) for a packet of the TUN's MTU.
    pub overhead: u32,
}

/// The largest inner packet `p` for which outer header + UDP + `alg.esp_len(p)` ≤ `path_mtu`;
/// refused (usage error) when that leaves less than [`MIN_TUN_MTU`].
pub fn mtu_plan(alg: EspAlg, outer_v6: bool, udp: bool, path_mtu: u32) -> Result<MtuPlan> {
    let outer = if outer_v6 {
        ip::IPV6_HEADER_LEN
    } else {
        ip::IPV4_HEADER_LEN
    } + if udp { UDP_HEADER_LEN as usize } else { 0 };
    let path = path_mtu as usize;
    // esp_len is monotonic in the payload length: walk down from the largest candidate (at
    // most an alignment block plus the fixed overhead below the path MTU).
    let mut p = path.saturating_sub(outer);
    while p > 0 && outer + alg.esp_len(p) > path {
        p -= 1;
    }
    let tun = p as u32;
    if tun < MIN_TUN_MTU {
        return Err(usage(format!(
            "the path MTU towards --remote is {path_mtu} bytes; {alg} tunnel mode adds \
             {} bytes to every packet (outer {} header{}, ESP header, IV, trailer, ICV), which \
             leaves no room for a TUN MTU of at least {MIN_TUN_MTU} bytes. Raise the MTU of the \
             outer interface or give a larger --path-mtu",
            path - p.min(path),
            if outer_v6 { "IPv6" } else { "IPv4" },
            if udp { " and UDP" } else { "" },
        )));
    }
    Ok(MtuPlan {
        path: path_mtu,
        tun,
        overhead: path_mtu - tun,
    })
}
