//! The TLS engine of EAP-TLS: rustls driven through buffers ([`ivnsec_core::pae::TlsEngine`]).
