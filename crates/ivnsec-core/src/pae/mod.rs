//! The 802.1X Port Access Entity of IEEE Std 802.1X-2020 (clauses 8, 11, 12) as state machines
//! without I/O, clock or randomness of their own, like the MKA participant ([`crate::mka`]).
//!
//! - [`tls`]: the [`TlsEngine`] trait: the TLS of EAP-TLS, driven through buffers. Core does no
//!   TLS itself; the node crate implements the trait with rustls.
//! - EAPOL and EAP framing live in [`crate::wire::eapol`] and [`crate::wire::eap`].
//!
//! Key hierarchy (docs/8021x.md):
//!
//! ```text
//! certificate ─EAP-TLS─▶ MSK (64 octets), EMSK, EAP Session-Id        RFC 5216 / RFC 9190
//! MSK, Session-Id, MACs ─▶ CAK, CKN                                   802.1X-2020 6.2.2
//! CAK, CKN ─▶ ICK, KEK ─▶ SAK (MKA, crate::mka)                       802.1X-2020 9.3, 9.8
//! ```

pub mod tls;

pub use tls::{
    CLIENT_HELLO, EAP_TYPE_TLS, EapKeys, SERVER_HELLO, TlsEngine, TlsFailure, TlsVersion,
    hello_random, tls12_session_id,
};
