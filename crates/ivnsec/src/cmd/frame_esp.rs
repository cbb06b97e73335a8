//! `ivnsec frame protect|verify` for `esp-…` profiles (IPsec ESP, RFC 4303): single IP packets as
//! hex, or one hex packet per stdin line with SA state (sequence numbers, replay window) kept
//! across lines.

use std::net::IpAddr;
use std::process::ExitCode;

use anyhow::Result;
use ivnsec_core::crypto::CryptoProvider;
use ivnsec_core::sa::DropReason;
use ivnsec_core::sa::esp::{
    EspAlg, EspMode, EspParams, EspProtectError, EspRx, EspTx, MAX_OVERHEAD,
};

use super::frame::{Refusal, SaArgs, protect_each, verify_each, verify_exit};
use crate::error::{parse_hex, usage};
use ivnsec_crypto::ProviderChoice;

/// Largest IP packet accepted (the IPv4 total length limit).
const MAX_PACKET: usize = 65535;

/// Transport or tunnel mode.
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
    /// ESP: Security Parameters Index, decimal or 0x-hex, 256..=4294967295 (0-255 are reserved).
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
    /// ESP: Security Parameters Index of the inbound SA, decimal or 0x-hex.
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

fn parse_spi(s: &str) -> Result<u32, String> {
    let v = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16),
        None => s.parse::<u32>(),
    }
    .map_err(|e| format!("not a 32-bit number: {e}"))?;
    if v < 256 {
        return Err("SPI values 0-255 are reserved (RFC 4303 §2.1)".into());
    }
    Ok(v)
}

struct Material {
    alg: EspAlg,
    key: Vec<u8>,
    auth_key: Vec<u8>,
    provider: &'static CryptoProvider,
}

fn material(sa: &SaArgs, auth_key: Option<&str>) -> Result<Material> {
    let alg = EspAlg::from_name(&sa.profile).ok_or_else(|| {
        let names: Vec<&str> = EspAlg::ALL.iter().map(|a| a.name()).collect();
        usage(format!(
            "--profile {}: unknown ESP profile (one of {})",
            sa.profile,
            names.join(", ")
        ))
    })?;
    for (given, opt) in [
        (sa.mac_key.is_some(), "--mac-key (ESP takes --auth-key)"),
        (sa.key_id.is_some(), "--key-id"),
        (sa.tag_len.is_some(), "--tag-len (the ESP ICV is 16 bytes)"),
    ] {
        if given {
            return Err(usage(format!("{alg} does not take {opt}")));
        }
    }
    let key = sa
        .key
        .as_deref()
        .map(|k| parse_hex("--key", k))
        .transpose()?
        .unwrap_or_default();
    let auth_key = auth_key
        .map(|k| parse_hex("--auth-key", k))
        .transpose()?
        .unwrap_or_default();
    Ok(Material {
        alg,
        key,
        auth_key,
        provider: provider(sa.provider, alg)?,
    })
}

fn provider(choice: ProviderChoice, alg: EspAlg) -> Result<&'static CryptoProvider> {
    let fast: &'static CryptoProvider = &ivnsec_crypto_fast::PROVIDER;
    let portable: &'static CryptoProvider = &ivnsec_crypto_portable::PROVIDER;
    let p = match choice {
        ProviderChoice::Portable => portable,
        ProviderChoice::Fast => fast,
        ProviderChoice::Auto if alg.supported_by(fast) => fast,
        ProviderChoice::Auto => portable,
    };
    if alg.supported_by(p) {
        Ok(p)
    } else {
        Err(usage(format!(
            "provider '{}' does not implement {alg}; use --provider portable or auto",
            p.name
        )))
    }
}

fn spi(spi: Option<u32>) -> Result<u32> {
    spi.ok_or_else(|| usage("--spi is required for ESP profiles"))
}

pub fn protect(
    sa: &SaArgs,
    seq: Option<u64>,
    opts: &EspProtectOpts,
    frame: &str,
) -> Result<ExitCode> {
    let m = material(sa, opts.auth_key.as_ref().map(|t| &*t.0))?;
    let seq = seq.ok_or_else(|| {
        usage("--seq is required for ESP profiles (the first sequence number, ≥ 1)")
    })?;
    let mode = match (
        opts.mode.unwrap_or_default(),
        opts.tunnel_src.as_ref().map(|a| *a.0),
        opts.tunnel_dst.as_ref().map(|a| *a.0),
    ) {
        (ModeArg::Transport, None, None) => EspMode::Transport,
        (ModeArg::Transport, _, _) => {
            return Err(usage("--tunnel-src/--tunnel-dst need --mode tunnel"));
        }
        (ModeArg::Tunnel, Some(src), Some(dst)) => EspMode::Tunnel { src, dst },
        (ModeArg::Tunnel, _, _) => {
            return Err(usage("--mode tunnel needs --tunnel-src and --tunnel-dst"));
        }
    };
    let params = EspParams {
        alg: m.alg,
        spi: spi(opts.spi)?,
        key: &m.key,
        auth_key: &m.auth_key,
        esn: opts.esn,
    };
    let mut tx = EspTx::new(m.provider, &params, mode, seq).map_err(|e| usage(e.to_string()))?;
    // --iv is the IV of the first packet; the AEADs count up from it (a unique IV per packet),
    // CBC uses fresh random IVs after the first (CBC IVs must be unpredictable).
    let mut iv = sa.iv.as_deref().map(|s| parse_hex("--iv", s)).transpose()?;
    if let Some(v) = &iv
        && v.len() != m.alg.iv_len()
    {
        return Err(usage(format!(
            "--iv must be {} bytes for {}, got {}",
            m.alg.iv_len(),
            m.alg,
            v.len()
        )));
    }
    match (&iv, m.alg.iv_len(), m.alg.random_iv()) {
        (_, 0, _) => {}
        (None, _, true) => eprintln!(
            "frame protect: no --iv given: each packet gets a fresh random {}-byte IV (RFC 3602), \
             carried in the packet after the sequence number",
            m.alg.iv_len()
        ),
        (None, n, false) => eprintln!(
            "frame protect: no --iv given: each packet's IV is its sequence number as {n} bytes \
             (RFC 4106 §3.1), the first {}",
            hex::encode(&seq.to_be_bytes()[..n.min(8)])
        ),
        (Some(_), _, _) => {}
    }
    let mut out = vec![0u8; MAX_PACKET + MAX_OVERHEAD];
    protect_each(frame, "PACKET", MAX_PACKET, |what, packet| {
        let n = match tx.protect_with_iv(packet, &mut out, iv.as_deref()) {
            Ok(n) => n,
            Err(e @ EspProtectError::BadPacket(_)) => {
                return Ok(Err(Refusal::new(DropReason::Malformed, e.to_string())));
            }
            Err(e @ (EspProtectError::TooLong | EspProtectError::BufferTooSmall { .. })) => {
                return Ok(Err(Refusal::new(DropReason::Oversize, e.to_string())));
            }
            // Exhausted sequence numbers, a failed provider: the SA cannot go on.
            Err(e) => return Err(usage(format!("{what}: {e}"))),
        };
        iv = match iv.take() {
            Some(v) if !m.alg.random_iv() => Some(increment(v)),
            _ => None,
        };
        Ok(Ok(out[..n].to_vec()))
    })
}

/// The IV as a big-endian counter, plus one (wrapping).
fn increment(mut v: Vec<u8>) -> Vec<u8> {
    for b in v.iter_mut().rev() {
        *b = b.wrapping_add(1);
        if *b != 0 {
            break;
        }
    }
    v
}

/// The inbound ESP SA the options describe (also used by `pcap verify`).
pub(crate) fn rx(sa: &SaArgs, replay_window: u32, opts: &EspVerifyOpts) -> Result<EspRx> {
    let m = material(sa, opts.auth_key.as_deref())?;
    if sa.iv.is_some() {
        return Err(usage(
            "--iv is for protect; ESP carries the IV in each packet",
        ));
    }
    let params = EspParams {
        alg: m.alg,
        spi: spi(opts.spi)?,
        key: &m.key,
        auth_key: &m.auth_key,
        esn: opts.esn,
    };
    EspRx::new(m.provider, &params, replay_window).map_err(|e| usage(e.to_string()))
}

pub fn verify(
    sa: &SaArgs,
    replay_window: u32,
    opts: &EspVerifyOpts,
    frame: &str,
) -> Result<ExitCode> {
    let mut rx = rx(sa, replay_window, opts)?;
    // Room for the whole protected packet: the SA verifies in the output buffer.
    let mut out = vec![0u8; MAX_PACKET + MAX_OVERHEAD];
    let t = verify_each(frame, "PACKET", MAX_PACKET + MAX_OVERHEAD, |_, bytes| {
        Ok(rx.verify(bytes, &mut out).map(|n| out[..n].to_vec()))
    })?;
    Ok(verify_exit(&t))
}
