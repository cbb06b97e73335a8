//! The MACsec options of `ivnsec frame protect|verify` and `pcap verify` (IEEE 802.1AE-2018, XPN
//! per 802.1AEbw); the SA they make is built in `ivnsec_node::frames::material`.

use ivnsec_core::sa::macsec::ValidateFrames;
use ivnsec_node::frames::material::{MacsecRxSettings, MacsecTxSettings};

use crate::error::parse_hex;

/// Options of `frame protect` that only macsec profiles take.
#[derive(clap::Args, Debug, Default)]
#[command(next_help_heading = "MACsec (macsec-… profiles)")]
pub struct MacsecProtectOpts {
    /// MACsec: SCI of the transmit SC, 8 bytes hex (MAC address ‖ port), e.g. 0200000000010001.
    #[arg(long, value_parser = hex_array::<8>)]
    pub sci: Option<[u8; 8]>,
    /// MACsec: association number 0-3.
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=3))]
    pub an: Option<u8>,
    /// MACsec: packet number of the (first) frame, ≥ 1; the full 64-bit PN for XPN suites. With
    /// `-`, frames are numbered upward from it.
    #[arg(long)]
    pub pn: Option<u64>,
    /// MACsec: integrity only (E = C = 0, user data in clear); default confidentiality.
    #[arg(long)]
    pub integrity_only: bool,
    /// MACsec: leave the SCI out of the SecTAG (SC = 0; the receiver knows it: point-to-point).
    #[arg(long)]
    pub no_sci: bool,
    /// MACsec: end station (ES = 1, SCI implicit = source MAC ‖ 0001; implies --no-sci).
    #[arg(long)]
    pub es: bool,
    /// MACsec: single copy broadcast (SCB = 1; implies --no-sci).
    #[arg(long)]
    pub scb: bool,
    /// MACsec XPN: short SCI, 4 bytes hex.
    #[arg(long, value_parser = hex_array::<4>)]
    pub ssci: Option<[u8; 4]>,
    /// MACsec XPN: salt, 12 bytes hex.
    #[arg(long, value_parser = hex_array::<12>)]
    pub salt: Option<[u8; 12]>,
}

/// Options of `frame verify` that only macsec profiles take.
#[derive(clap::Args, Debug, Default)]
#[command(next_help_heading = "MACsec (macsec-… profiles)")]
pub struct MacsecVerifyOpts {
    /// MACsec: SCI of the receive SC (the peer's), 8 bytes hex.
    #[arg(long, value_parser = hex_array::<8>)]
    pub sci: Option<[u8; 8]>,
    /// MACsec: association number of the receive SA, 0-3.
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=3))]
    pub an: Option<u8>,
    /// MACsec XPN: short SCI, 4 bytes hex.
    #[arg(long, value_parser = hex_array::<4>)]
    pub ssci: Option<[u8; 4]>,
    /// MACsec XPN: salt, 12 bytes hex.
    #[arg(long, value_parser = hex_array::<12>)]
    pub salt: Option<[u8; 12]>,
    /// MACsec: lowest acceptable PN of the receive SA (XPN: also the base for recovering the
    /// upper 32 PN bits, 802.1AE §10.6.2).
    #[arg(long, default_value_t = 1)]
    pub lowest_pn: u64,
    /// MACsec: validateFrames: strict (discard anything not valid), check (deliver frames with a
    /// bad ICV if not encrypted, counting them) or disabled (no ICV check unless encrypted).
    #[arg(long, default_value = "strict", value_parser = parse_validate)]
    pub validate: ValidateFrames,
}

/// clap value parser: exactly `N` bytes of hex.
fn hex_array<const N: usize>(s: &str) -> std::result::Result<[u8; N], String> {
    let v = parse_hex("value", s).map_err(|e| e.to_string())?;
    v.as_slice()
        .try_into()
        .map_err(|_| format!("must be {N} bytes of hex, got {} bytes", v.len()))
}

fn parse_validate(s: &str) -> std::result::Result<ValidateFrames, String> {
    s.parse().map_err(|e: &str| e.to_string())
}

impl From<MacsecProtectOpts> for MacsecTxSettings {
    fn from(o: MacsecProtectOpts) -> Self {
        MacsecTxSettings {
            sci: o.sci,
            an: o.an,
            pn: o.pn,
            integrity_only: o.integrity_only,
            no_sci: o.no_sci,
            es: o.es,
            scb: o.scb,
            ssci: o.ssci,
            salt: o.salt,
        }
    }
}

impl From<MacsecVerifyOpts> for MacsecRxSettings {
    fn from(o: MacsecVerifyOpts) -> Self {
        MacsecRxSettings {
            sci: o.sci,
            an: o.an,
            ssci: o.ssci,
            salt: o.salt,
            lowest_pn: o.lowest_pn,
            validate: o.validate,
        }
    }
}
