//! The 802.1X Port Access Entity of IEEE Std 802.1X-2020 (clauses 8, 11, 12) as state machines
//! without I/O, clock or randomness of their own, like the MKA participant ([`crate::mka`]).
//!
//! - [`tls`]: the [`TlsEngine`] trait: the TLS of EAP-TLS, driven through buffers. Core does no
//!   TLS itself; the node crate implements the trait with rustls.
//! - [`eap_tls`]: EAP-TLS fragmentation, acknowledgements and bounded reassembly (RFC 5216).
//! - [`supplicant`]: the supplicant PAE and EAP-TLS peer ([`Supplicant`]).
//! - [`authenticator`]: the authenticator PAE in EAP pass-through mode ([`Authenticator`]).
//! - [`cak`]: CAK and CKN from the MSK and the EAP Session-Id (802.1X-2020 6.2.2).
//! - EAPOL and EAP framing live in [`crate::wire::eapol`] and [`crate::wire::eap`].
//!
//! Both machines take the whole Ethernet frame (`handle_frame(now, frame)`), send whole frames
//! (`poll_transmit(now, buf)`), and are driven by `poll_timeout()` / `handle_timeout(now)` and
//! `poll_event()`. A driver hands EAPOL-MKA frames ([`crate::wire::eapol::packet_type`] = 5) to
//! the MKA participant and the rest to the PAE. Every dropped frame is an `Err(PaeDrop)` and
//! counted in [`PaeCounters::drops`] (names in [`PaeDrop::ALL`]).
//!
//! Key hierarchy (docs/8021x.md):
//!
//! ```text
//! certificate ─EAP-TLS─▶ MSK (64 octets), EMSK, EAP Session-Id        RFC 5216 / RFC 9190
//! MSK, Session-Id, MACs ─▶ CAK, CKN                                   802.1X-2020 6.2.2
//! CAK, CKN ─▶ ICK, KEK ─▶ SAK (MKA, crate::mka)                       802.1X-2020 9.3, 9.8
//! ```

pub mod authenticator;
pub mod cak;
pub mod eap_tls;
pub mod supplicant;
pub mod tls;
mod types;

pub use authenticator::{
    Authenticator, AuthenticatorConfig, AuthenticatorEvent, ServerAnswer, SessionPhase,
    SessionStatus,
};
pub use supplicant::{
    EngineFactory, Supplicant, SupplicantConfig, SupplicantEvent, SupplicantState, SupplicantStatus,
};
pub use tls::{
    CLIENT_HELLO, EAP_TYPE_TLS, EapKeys, SERVER_HELLO, TlsEngine, TlsFailure, TlsVersion,
    hello_random, tls12_session_id,
};
pub use types::{AuthFailure, PaeCounters, PaeDrop};
#[cfg(test)]
mod tests;
