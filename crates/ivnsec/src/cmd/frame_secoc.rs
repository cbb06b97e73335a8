//! `ivnsec frame protect|verify` for `secoc-…` profiles (AUTOSAR SecOC): single Authentic /
//! Secured I-PDUs as hex, or one per stdin line with the freshness state (the sender's counter,
//! the receiver's last accepted value) kept across lines.

use std::process::ExitCode;

use anyhow::Result;
use ivnsec_core::crypto::CryptoProvider;
use ivnsec_core::sa::DropReason;
use ivnsec_core::sa::secoc::{
    DEFAULT_FULL_FV_BITS, DEFAULT_FV_BITS, DEFAULT_MAC_BITS, SecocAlg, SecocParams,
    SecocProtectError, SecocRx, SecocRxOptions, SecocTx,
};

use super::frame::{Refusal, SaArgs, protect_each, verify_each, verify_exit};
use crate::error::{parse_hex, usage};
use ivnsec_crypto::ProviderChoice;

/// Largest Authentic I-PDU accepted (SecOC over TP carries large PDUs; this bounds a line).
const MAX_PDU: usize = 65535;
/// Longest authentication information: 64 FV bits and 256 MAC bits.
const MAX_OVERHEAD: usize = 40;

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

struct Material {
    alg: SecocAlg,
    key: Vec<u8>,
    data_id: u16,
    provider: &'static CryptoProvider,
}

impl Material {
    fn params(&self, l: SecocLengths) -> SecocParams<'_> {
        SecocParams {
            fv_bits: l.fv_bits.unwrap_or(DEFAULT_FV_BITS),
            mac_bits: l.mac_bits.unwrap_or(DEFAULT_MAC_BITS),
            full_fv_bits: l.full_fv_bits.unwrap_or(DEFAULT_FULL_FV_BITS),
            ..SecocParams::new(self.alg, &self.key, self.data_id)
        }
    }
}

fn material(sa: &SaArgs, data_id: Option<u16>) -> Result<Material> {
    let alg = SecocAlg::from_name(&sa.profile).ok_or_else(|| {
        let names: Vec<&str> = SecocAlg::ALL.iter().map(|a| a.name()).collect();
        usage(format!(
            "--profile {}: unknown SecOC profile (one of {})",
            sa.profile,
            names.join(", ")
        ))
    })?;
    for (given, opt) in [
        (
            sa.mac_key.is_some(),
            "--mac-key (SecOC takes its MAC key as --key)",
        ),
        (sa.iv.is_some(), "--iv"),
        (sa.key_id.is_some(), "--key-id"),
        (sa.tag_len.is_some(), "--tag-len (SecOC uses --mac-bits)"),
    ] {
        if given {
            return Err(usage(format!("{alg} does not take {opt}")));
        }
    }
    let key = parse_hex(
        "--key",
        sa.key.as_deref().ok_or_else(|| {
            usage(match alg.key_len() {
                Some(n) => format!("{alg} needs --key ({n} bytes hex)"),
                None => format!("{alg} needs --key (hex, at least 1 byte)"),
            })
        })?,
    )?;
    let data_id = data_id.ok_or_else(|| usage("SecOC profiles need --data-id (0-65535)"))?;
    Ok(Material {
        alg,
        key,
        data_id,
        provider: provider(sa.provider, alg)?,
    })
}

pub(crate) fn provider(choice: ProviderChoice, alg: SecocAlg) -> Result<&'static CryptoProvider> {
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

pub fn protect(
    sa: &SaArgs,
    seq: Option<u64>,
    opts: &SecocProtectOpts,
    pdu: &str,
) -> Result<ExitCode> {
    if seq.is_some() {
        return Err(usage(
            "SecOC profiles take --freshness (the full freshness value), not --seq",
        ));
    }
    let m = material(sa, opts.data_id)?;
    let first = opts.freshness.ok_or_else(|| {
        usage("SecOC protect needs --freshness (the full freshness value of the first PDU, ≥ 1)")
    })?;
    let mut tx = SecocTx::new(m.provider, &m.params(opts.lengths), first)
        .map_err(|e| usage(e.to_string()))?;
    let mut out = vec![0u8; MAX_PDU + MAX_OVERHEAD];
    protect_each(pdu, "PDU", MAX_PDU, |what, authentic| {
        match tx.protect(authentic, &mut out) {
            Ok(n) => Ok(Ok(out[..n].to_vec())),
            Err(e @ SecocProtectError::BufferTooSmall { .. }) => {
                Ok(Err(Refusal::new(DropReason::Oversize, e.to_string())))
            }
            // Every freshness value used: the SA cannot go on.
            Err(e) => Err(usage(format!("{what}: {e}"))),
        }
    })
}

pub fn verify(sa: &SaArgs, opts: &SecocVerifyOpts, pdu: &str) -> Result<ExitCode> {
    let m = material(sa, opts.data_id)?;
    let rx_opts = SecocRxOptions {
        last_freshness: opts.last_freshness.unwrap_or(0),
        acceptance_window: opts.acceptance_window,
        verify_attempts: opts.verify_attempts.unwrap_or(0),
    };
    let mut rx = SecocRx::new(m.provider, &m.params(opts.lengths), rx_opts)
        .map_err(|e| usage(e.to_string()))?;
    let single = pdu != "-";
    let t = verify_each(pdu, "PDU", MAX_PDU + MAX_OVERHEAD, |_, secured| {
        Ok(rx.verify(secured).map(|v| {
            if single {
                eprintln!("freshness {}", v.freshness);
            }
            secured[..v.authentic_len].to_vec()
        }))
    })?;
    if !single {
        eprintln!("last freshness {}", rx.last_freshness());
    }
    Ok(verify_exit(&t))
}
