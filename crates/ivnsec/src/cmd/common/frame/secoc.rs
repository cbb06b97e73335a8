//! The AUTOSAR SecOC options of `ivnsec frame protect|verify`; the SA they make (the sender's
//! counter, the receiver's last accepted value) is built in `ivnsec_node::frames::material`.

use ivnsec_node::frames::material::{self, SecocRxSettings, SecocTxSettings};

/// Options of `frame protect` that only secoc profiles take.
#[derive(clap::Args, Debug, Default)]
#[command(next_help_heading = "AUTOSAR SecOC (secoc-… profiles)")]
pub struct SecocProtectOpts {
    /// SecOC: Data ID of the PDU, 0-65535 (decimal or 0x-hex); the first 16 MAC input bits.
    #[arg(long, value_parser = parse_num::<u16>)]
    pub data_id: Option<u16>,
    /// SecOC: full freshness value of the (first) PDU, ≥ 1 (decimal or 0x-hex). With `-`, the
    /// counter counts up from it and refuses to wrap.
    #[arg(long, value_parser = parse_num::<u64>)]
    pub freshness: Option<u64>,
    #[command(flatten)]
    pub lengths: SecocLengths,
}

/// Options of `frame verify` that only secoc profiles take.
#[derive(clap::Args, Debug, Default)]
#[command(next_help_heading = "AUTOSAR SecOC (secoc-… profiles)")]
pub struct SecocVerifyOpts {
    /// SecOC: Data ID of the PDU, 0-65535 (decimal or 0x-hex).
    #[arg(long, value_parser = parse_num::<u16>)]
    pub data_id: Option<u16>,
    #[command(flatten)]
    pub lengths: SecocLengths,
    /// SecOC: the last accepted full freshness value (default 0: none yet).
    #[arg(long, value_parser = parse_num::<u64>)]
    pub last_freshness: Option<u64>,
    /// SecOC: acceptance window W ≥ 1: only last < FV ≤ last + W is accepted (default
    /// 2^fv-bits, the most one reconstruction can advance).
    #[arg(long, value_parser = parse_num::<u64>)]
    pub acceptance_window: Option<u64>,
    /// SecOC: further verification attempts with the next freshness values of the same low bits
    /// (FV + k·2^fv-bits, inside the window) when the MAC fails (SecOCAuthenticationVerifyAttempts;
    /// default 0: one attempt).
    #[arg(long)]
    pub verify_attempts: Option<u16>,
}

/// Bit lengths, shared by protect and verify.
#[derive(clap::Args, Debug, Default, Clone, Copy)]
pub struct SecocLengths {
    /// SecOC: truncated freshness value bits on the wire, 0..=full-fv-bits [default: 8].
    #[arg(long)]
    pub fv_bits: Option<u8>,
    /// SecOC: truncated authenticator bits on the wire, 1..=128 (CMAC) or 256 (HMAC-SHA-256)
    /// [default: 24].
    #[arg(long)]
    pub mac_bits: Option<u16>,
    /// SecOC: full freshness value bits, 1..=64 [default: 64].
    #[arg(long)]
    pub full_fv_bits: Option<u8>,
}

/// clap value parser: decimal or `0x` hex.
fn parse_num<T: TryFrom<u64>>(s: &str) -> std::result::Result<T, String> {
    let v = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse::<u64>(),
    }
    .map_err(|e| format!("not a number: {e}"))?;
    T::try_from(v).map_err(|_| format!("{v} is out of range"))
}

impl From<SecocLengths> for material::SecocLengths {
    fn from(l: SecocLengths) -> Self {
        material::SecocLengths {
            fv_bits: l.fv_bits,
            mac_bits: l.mac_bits,
            full_fv_bits: l.full_fv_bits,
        }
    }
}

impl From<SecocProtectOpts> for SecocTxSettings {
    fn from(o: SecocProtectOpts) -> Self {
        SecocTxSettings {
            data_id: o.data_id,
            freshness: o.freshness,
            lengths: o.lengths.into(),
        }
    }
}

impl From<SecocVerifyOpts> for SecocRxSettings {
    fn from(o: SecocVerifyOpts) -> Self {
        SecocRxSettings {
            data_id: o.data_id,
            lengths: o.lengths.into(),
            last_freshness: o.last_freshness,
            acceptance_window: o.acceptance_window,
            verify_attempts: o.verify_attempts,
        }
    }
}
