//! 802.1X for the MACsec TAP and the gateway (docs/8021x.md): the drivers of the core's PAE
//! ([`ivnsec_core::pae`]), the RADIUS client of the authenticator, and the TLS engine of
//! EAP-TLS.

pub mod radius;
pub mod source;
pub mod tls;
