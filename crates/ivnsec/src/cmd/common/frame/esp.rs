//! The IPsec ESP options of `ivnsec frame protect|verify` and `pcap verify` (RFC 4303); the SA
//! they make is built in `ivnsec_node::frames::material`.

use std::net::IpAddr;

use ivnsec_node::frames::material::{EspModeChoice, EspRxSettings, EspTxSettings};
use zeroize::Zeroizing;

/// Transport or tunnel mode (the lab's [`EspModeChoice`] with clap's names and help).
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ModeArg {
    /// ESP after the IP header (RFC 4303 §3.1.1).
    #[default]
    Transport,
    /// The whole packet inside a new IP header (--tunnel-src, --tunnel-dst).
    Tunnel,
}

/// Options of `frame protect` that only esp profiles take.
#[derive(clap::Args, Debug, Default)]
#[command(next_help_heading = "IPsec ESP (esp-… profiles)")]
pub struct EspProtectOpts {
    /// ESP: Security Parameters Index, decimal or 0x-hex, 1..=4294967295. 0 is refused (local
    /// use, never on the wire); 1-255, which RFC 4303 §2.1 keeps for IANA, work with a warning.
    #[arg(long, value_parser = parse_spi)]
    pub spi: Option<u32>,
    /// ESP: HMAC-SHA-256 key in hex, 32 bytes (esp-null-hmac-sha256, esp-aes*-cbc-hmac-sha256).
    #[arg(long)]
    pub auth_key: Option<Text>,
    /// ESP: extended sequence numbers (64-bit; the high half is authenticated, not sent).
    #[arg(long)]
    pub esn: bool,
    /// ESP: encapsulation mode.
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    /// ESP tunnel mode: outer source address (IPv4 or IPv6).
    #[arg(long)]
    pub tunnel_src: Option<Addr>,
    /// ESP tunnel mode: outer destination address (same family as --tunnel-src).
    #[arg(long)]
    pub tunnel_dst: Option<Addr>,
}

/// Options of `frame verify` that only esp profiles take.
#[derive(clap::Args, Debug, Default)]
#[command(next_help_heading = "IPsec ESP (esp-… profiles)")]
pub struct EspVerifyOpts {
    /// ESP: Security Parameters Index of the inbound SA, decimal or 0x-hex, 1..=4294967295
    /// (1-255, reserved for IANA by RFC 4303 §2.1, are accepted: vectors and captures use them).
    #[arg(long, value_parser = parse_spi)]
    pub spi: Option<u32>,
    /// ESP: HMAC-SHA-256 key in hex, 32 bytes (esp-null-hmac-sha256, esp-aes*-cbc-hmac-sha256).
    #[arg(long)]
    pub auth_key: Option<String>,
    /// ESP: extended sequence numbers (the high half is inferred from the replay window, RFC
    /// 4303 Appendix A; a fresh receiver starts at 0).
    #[arg(long)]
    pub esn: bool,
}

// The option structs are flattened into `frame protect`, whose size the `Command` enum carries
// inline: boxed newtypes keep them small (clippy::large_enum_variant).

/// A string option kept on the heap.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Text(Box<str>);

impl std::str::FromStr for Text {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Text(s.into()))
    }
}

/// An IP address option kept on the heap.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Addr(Box<IpAddr>);

impl std::str::FromStr for Addr {
    type Err = std::net::AddrParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Addr(Box::new(s.parse()?)))
    }
}

/// A 32-bit SPI in decimal or 0x-hex; which values an SA may take is checked where the SA is
/// made (`ivnsec_node::frames::material`).
fn parse_spi(s: &str) -> Result<u32, String> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16),
        None => s.parse::<u32>(),
    }
    .map_err(|e| format!("not a 32-bit number: {e}"))
}

impl From<ModeArg> for EspModeChoice {
    fn from(m: ModeArg) -> Self {
        match m {
            ModeArg::Transport => EspModeChoice::Transport,
            ModeArg::Tunnel => EspModeChoice::Tunnel,
        }
    }
}

impl From<EspProtectOpts> for EspTxSettings {
    fn from(o: EspProtectOpts) -> Self {
        EspTxSettings {
            spi: o.spi,
            auth_key: o.auth_key.map(|t| Zeroizing::new(t.0.into())),
            esn: o.esn,
            mode: o.mode.map(Into::into),
            tunnel_src: o.tunnel_src.map(|a| *a.0),
            tunnel_dst: o.tunnel_dst.map(|a| *a.0),
        }
    }
}

impl From<EspVerifyOpts> for EspRxSettings {
    fn from(o: EspVerifyOpts) -> Self {
        EspRxSettings {
            spi: o.spi,
            auth_key: o.auth_key.map(Zeroizing::new),
            esn: o.esn,
        }
    }
}
