//! `ivnsec frame protect|verify` for `macsec-…` profiles (IEEE 802.1AE-2018, XPN per 802.1AEbw):
//! single frames as hex, or one hex frame per stdin line with SA state kept across lines.

use std::process::ExitCode;

use anyhow::Result;
use ivnsec_core::crypto::CryptoProvider;
use ivnsec_core::sa::macsec::{
    CipherSuite, KeyParams, MacsecRx, MacsecTx, RxOptions, RxStatus, TxOptions, ValidateFrames,
};
use ivnsec_core::sa::{DropReason, ProtectError};
use ivnsec_core::suite::Suite;
use ivnsec_core::wire::macsec::Sci;

use super::frame::{Refusal, SaArgs, protect_each, verify_each, verify_exit};
use crate::error::{parse_hex, usage};
use crate::providers;

/// Largest plain frame accepted: a jumbo frame.
const MAX_FRAME: usize = 9216;
/// SecTAG with SCI plus ICV.
const MAX_OVERHEAD: usize = 32;

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

struct Material {
    suite: CipherSuite,
    key: Vec<u8>,
    sci: Sci,
    an: u8,
    ssci: Option<u32>,
    salt: Option<[u8; 12]>,
    provider: &'static CryptoProvider,
}

impl Material {
    fn keys(&self) -> KeyParams<'_> {
        KeyParams {
            suite: self.suite,
            key: &self.key,
            sci: self.sci,
            an: self.an,
            ssci: self.ssci,
            salt: self.salt,
        }
    }
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

fn material(
    sa: &SaArgs,
    sci: Option<[u8; 8]>,
    an: Option<u8>,
    ssci: Option<[u8; 4]>,
    salt: Option<[u8; 12]>,
) -> Result<Material> {
    let suite = CipherSuite::from_profile(&sa.profile).ok_or_else(|| {
        usage(format!(
            "--profile {}: unknown MACsec profile (macsec-gcm-aes-128, macsec-gcm-aes-256, macsec-gcm-aes-xpn-128, macsec-gcm-aes-xpn-256)",
            sa.profile
        ))
    })?;
    for (given, name) in [
        (sa.mac_key.is_some(), "--mac-key"),
        (sa.iv.is_some(), "--iv"),
        (sa.key_id.is_some(), "--key-id"),
        (sa.tag_len.is_some(), "--tag-len"),
    ] {
        if given {
            return Err(usage(format!(
                "{name} is an IVN-AE option; MACsec profiles do not take it"
            )));
        }
    }
    let key = parse_hex(
        "--key",
        sa.key
            .as_deref()
            .ok_or_else(|| usage(format!("{suite} needs --key")))?,
    )?;
    let sci = Sci(sci.ok_or_else(|| usage("MACsec profiles need --sci (8 bytes hex)"))?);
    let an = an.ok_or_else(|| usage("MACsec profiles need --an (0-3)"))?;
    let ssci = ssci.map(u32::from_be_bytes);
    if suite.is_xpn() && (ssci.is_none() || salt.is_none()) {
        return Err(usage(format!(
            "{suite} needs --ssci (4 bytes hex) and --salt (12 bytes hex)"
        )));
    }
    if !suite.is_xpn() && (ssci.is_some() || salt.is_some()) {
        return Err(usage(format!(
            "{suite} takes no --ssci/--salt (XPN profiles only)"
        )));
    }
    let provider = providers::select(sa.provider, Suite::Aead(suite.aead())).map_err(usage)?;
    Ok(Material {
        suite,
        key,
        sci,
        an,
        ssci,
        salt,
        provider,
    })
}

pub fn protect(sa: &SaArgs, opts: &MacsecProtectOpts, frame: &str) -> Result<ExitCode> {
    let m = material(sa, opts.sci, opts.an, opts.ssci, opts.salt)?;
    let pn = opts
        .pn
        .ok_or_else(|| usage("MACsec protect needs --pn (≥ 1)"))?;
    let tx_opts = TxOptions {
        confidentiality: !opts.integrity_only,
        include_sci: !(opts.no_sci || opts.es || opts.scb),
        es: opts.es,
        scb: opts.scb,
    };
    let mut tx =
        MacsecTx::new(m.provider, &m.keys(), tx_opts, pn).map_err(|e| usage(e.to_string()))?;
    let mut out = vec![0u8; MAX_FRAME + MAX_OVERHEAD];
    protect_each(frame, "FRAME", MAX_FRAME, |what, plain| {
        if opts.es && plain.len() >= 12 {
            let mut src = [0u8; 6];
            src.copy_from_slice(&plain[6..12]);
            if Sci::end_station(ivnsec_core::wire::ethernet::MacAddr(src)) != m.sci {
                return Ok(Err(Refusal::new(
                    DropReason::ForeignSource,
                    format!(
                        "--es needs --sci = source MAC ‖ 0001, but the source MAC is {}",
                        hex::encode(src)
                    ),
                )));
            }
        }
        match tx.protect(plain, &mut out) {
            Ok(n) => Ok(Ok(out[..n].to_vec())),
            Err(e @ ProtectError::FrameTooShort) => {
                Ok(Err(Refusal::new(DropReason::Truncated, e.to_string())))
            }
            // Exhausted PNs or a failed provider: the SA cannot go on.
            Err(e) => Err(usage(format!("{what}: {e}"))),
        }
    })
}

/// The MACsec receive SC/SA the options describe (also used by `pcap verify`).
pub(crate) fn rx(sa: &SaArgs, replay_window: u32, opts: &MacsecVerifyOpts) -> Result<MacsecRx> {
    let m = material(sa, opts.sci, opts.an, opts.ssci, opts.salt)?;
    let rx_opts = RxOptions {
        validate: opts.validate,
        replay_protect: true,
        replay_window,
        lowest_pn: opts.lowest_pn,
    };
    MacsecRx::new(m.provider, &m.keys(), rx_opts).map_err(|e| usage(e.to_string()))
}

pub fn verify(
    sa: &SaArgs,
    replay_window: u32,
    opts: &MacsecVerifyOpts,
    frame: &str,
) -> Result<ExitCode> {
    let mut rx = rx(sa, replay_window, opts)?;
    let mut out = vec![0u8; MAX_FRAME + MAX_OVERHEAD];
    let single = frame != "-";
    let mut not_validated = 0u64;
    let t = verify_each(frame, "FRAME", MAX_FRAME + MAX_OVERHEAD, |_, bytes| {
        Ok(match rx.verify(bytes, &mut out) {
            Ok((n, status)) => {
                if status != RxStatus::Ok {
                    not_validated += 1;
                    if single {
                        eprintln!(
                            "NOT VALIDATED {} (delivered as validateFrames allows)",
                            status.name()
                        );
                    }
                }
                Ok(out[..n].to_vec())
            }
            Err(reason) => Err(reason),
        })
    })?;
    let counters: Vec<String> = rx
        .counters()
        .named()
        .iter()
        .filter(|(_, v)| *v > 0)
        .map(|(n, v)| format!("{n}={v}"))
        .collect();
    eprintln!("counters: {}", counters.join(" "));
    Ok(if not_validated == 0 {
        verify_exit(&t)
    } else {
        ExitCode::from(1)
    })
}
