//! What runs in the vehicle: the long-running products an ECU or a gateway runs, apart from the
//! experiments that measure them. The MACsec TAP SecY with its MKA driver and key-server client
//! (`macsec`), the ESP tunnel (`esp_tunnel`), the bump-in-the-wire gateway (`gateway`), SOME/IP
//! services (`someip`), the nonce high-water module and key files every sender goes through
//! (`keys`), frame batches and offline capture checks (`frames`), the vehicle PKI and key server
//! (`pki`), the secured channel as a node opens it (`channel`), and the streams of `send` and
//! `receive` on a link (`traffic`). Protocol logic lives in the
//! core crate and raw I/O in the net crate; this crate drives them.
#![forbid(unsafe_code)]

pub mod busy_poll;
pub mod channel;
pub mod cpu_latency;
pub mod dot1x;
pub mod error;
pub mod esp_tunnel;
pub mod frames;
pub mod gateway;
pub mod keys;
pub mod macsec;
pub mod metrics;
pub mod pki;
pub mod someip;
pub mod stages;
pub mod sync;
pub mod traffic;
pub mod workers;
