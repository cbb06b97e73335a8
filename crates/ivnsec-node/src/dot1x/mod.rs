//! 802.1X for the MACsec TAP and the gateway (docs/8021x.md): the RADIUS client of the
//! authenticator and the TLS engine of EAP-TLS. The key source that drives the core's PAE
//! ([`ivnsec_core::pae`]) with them is [`crate::macsec::dot1x`], beside the other key sources.

pub mod radius;
pub mod tls;
