//! `ivnsec frame protect|verify`: single frames as hex, or one hex frame per line on stdin with SA
//! state kept across lines (so replay protection works over a batch).

use std::io::{BufRead, Write};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Subcommand;
use ivnsec_core::crypto::{AEAD_NONCE_LEN, CryptoProvider};
use ivnsec_core::sa::ivnae::{IvnAeRx, IvnAeTx, SaParams};
use ivnsec_core::sa::{DropCounters, DropReason};
use ivnsec_core::suite::IvnAeProfile;

use crate::cli::{parse_hex, usage};
use crate::providers::{self, ProviderChoice};

#[derive(Subcommand, Debug)]
pub enum Args {
    /// Protect a plain Ethernet frame (dst ‖ src ‖ EtherType ‖ payload) as IVN-AE; prints hex.
    #[command(
        after_help = "Example:\n  ivnsec frame protect --profile aes128-gcm --key 000102030405060708090a0b0c0d0e0f \\\n      --seq 1 020000000002020000000001080045000014"
    )]
    Protect {
        #[command(flatten)]
        sa: SaArgs,
        /// Sequence number of the (first) frame, ≥ 1 (IVN-AE, ESP). With `-`, frames are numbered
        /// upward from it.
        #[arg(long)]
        seq: Option<u64>,
        #[command(flatten)]
        macsec: super::frame_macsec::MacsecProtectOpts,
        #[command(flatten)]
        esp: super::frame_esp::EspProtectOpts,
        #[command(flatten)]
        secoc: super::frame_secoc::SecocProtectOpts,
        /// Hex of the plain frame (IP packet for ESP, Authentic I-PDU for SecOC), or `-` to read
        /// one per line from stdin.
        frame: String,
    },
    /// Verify an IVN-AE frame; prints the recovered plain frame (exit 0) or the drop reason on
    /// stderr (exit 1).
    #[command(
        after_help = "With `-`, each stdin line is answered by the plain frame in hex or by\n`DROP <reason>`; the exit code is 1 when any frame was dropped."
    )]
    Verify {
        #[command(flatten)]
        sa: SaArgs,
        /// Replay window W: 0 accepts only increasing sequence numbers; otherwise a frame within
        /// W of the highest is accepted once. (SecOC: see --acceptance-window.)
        #[arg(long, default_value_t = 64)]
        replay_window: u32,
        #[command(flatten)]
        macsec: super::frame_macsec::MacsecVerifyOpts,
        #[command(flatten)]
        esp: super::frame_esp::EspVerifyOpts,
        #[command(flatten)]
        secoc: super::frame_secoc::SecocVerifyOpts,
        /// Hex of the protected frame (ESP packet for ESP, Secured I-PDU for SecOC), or `-` to
        /// read one per line from stdin.
        frame: String,
    },
}

/// The security association, as given on the command line.
#[derive(clap::Args, Debug)]
pub struct SaArgs {
    /// Profile: an IVN-AE suite name, with `/auth` or `/conf` for AEAD suites (default conf);
    /// or a standard protocol profile (`macsec-…`, `esp-…`, `secoc-…`). `ivnsec suites` lists
    /// them.
    #[arg(long)]
    pub profile: String,
    /// Cipher key in hex (AEAD and AES-CBC/CTR suites).
    #[arg(long)]
    pub key: Option<String>,
    /// HMAC key in hex, any length ≥ 1 byte (HMAC and AES-CBC/CTR-HMAC suites).
    #[arg(long)]
    pub mac_key: Option<String>,
    /// IVN-AE: per-SA IV in hex, 12 bytes, XORed with the sequence number to form the nonce.
    #[arg(long)]
    pub iv: Option<String>,
    /// Key id carried in the frame (0-255).
    #[arg(long)]
    pub key_id: Option<u8>,
    /// Truncate HMAC tags to this many bytes (≥ max(10, digest/2)); default full length.
    #[arg(long)]
    pub tag_len: Option<usize>,
    /// Crypto provider: portable, fast, or auto (fast when it has the suite).
    #[arg(long, default_value = "auto")]
    pub provider: ProviderChoice,
}

struct SaMaterial {
    key: Vec<u8>,
    mac_key: Vec<u8>,
    iv: [u8; AEAD_NONCE_LEN],
}

impl SaArgs {
    fn material(&self) -> Result<SaMaterial> {
        let key = self
            .key
            .as_deref()
            .map(|k| parse_hex("--key", k))
            .transpose()?
            .unwrap_or_default();
        let mac_key = self
            .mac_key
            .as_deref()
            .map(|k| parse_hex("--mac-key", k))
            .transpose()?
            .unwrap_or_default();
        let iv = match &self.iv {
            None => [0; AEAD_NONCE_LEN],
            Some(s) => {
                let v = parse_hex("--iv", s)?;
                v.as_slice().try_into().map_err(|_| {
                    usage(format!(
                        "--iv must be {AEAD_NONCE_LEN} bytes, got {}",
                        v.len()
                    ))
                })?
            }
        };
        Ok(SaMaterial { key, mac_key, iv })
    }

    fn ivnae_profile(&self) -> Result<IvnAeProfile> {
        self.profile.parse().map_err(|e| {
            usage(format!(
                "--profile {}: {e} (see `ivnsec suites`)",
                self.profile
            ))
        })
    }

    fn params<'a>(&self, profile: IvnAeProfile, m: &'a SaMaterial) -> SaParams<'a> {
        SaParams {
            profile,
            key: &m.key,
            mac_key: &m.mac_key,
            iv: m.iv,
            key_id: self.key_id.unwrap_or(0),
            tag_len: self.tag_len,
        }
    }

    fn provider(&self, profile: IvnAeProfile) -> Result<&'static CryptoProvider> {
        providers::select(self.provider, profile.suite).map_err(usage)
    }
}

/// Largest frame accepted on a line: a jumbo frame plus any overhead.
const MAX_FRAME: usize = 9216;

pub fn run(args: Args) -> Result<ExitCode> {
    match args {
        Args::Protect {
            sa,
            seq,
            macsec,
            esp,
            secoc,
            frame,
        } => {
            if sa.profile.starts_with("macsec-") {
                super::frame_macsec::protect(&sa, &macsec, &frame)
            } else if sa.profile.starts_with("esp-") {
                super::frame_esp::protect(&sa, seq, &esp, &frame)
            } else if sa.profile.starts_with("secoc-") {
                super::frame_secoc::protect(&sa, seq, &secoc, &frame)
            } else {
                let seq = seq.ok_or_else(|| usage("--seq is required for IVN-AE profiles"))?;
                protect(&sa, seq, &frame)
            }
        }
        Args::Verify {
            sa,
            replay_window,
            macsec,
            esp,
            secoc,
            frame,
        } => {
            if sa.profile.starts_with("macsec-") {
                super::frame_macsec::verify(&sa, replay_window, &macsec, &frame)
            } else if sa.profile.starts_with("esp-") {
                super::frame_esp::verify(&sa, replay_window, &esp, &frame)
            } else if sa.profile.starts_with("secoc-") {
                super::frame_secoc::verify(&sa, &secoc, &frame)
            } else {
                verify(&sa, replay_window, &frame)
            }
        }
    }
}

/// Runs `f` on the single hex argument, or (for `-`) on each non-empty stdin line, with a name
/// for the input (`name` or `stdin line N`) to use in messages. Shared by every protocol.
pub(crate) fn for_each_input(
    arg: &str,
    name: &str,
    mut f: impl FnMut(&str, Vec<u8>) -> Result<()>,
) -> Result<()> {
    if arg != "-" {
        return f(name, parse_hex(name, arg)?);
    }
    for (i, line) in std::io::stdin().lock().lines().enumerate() {
        let line = line.context("reading stdin")?;
        if line.trim().is_empty() {
            continue;
        }
        let what = format!("stdin line {}", i + 1);
        let bytes = parse_hex(&what, &line)?;
        f(&what, bytes)?;
    }
    Ok(())
}

/// Protects each input with `one` (which returns the protected bytes) and prints them as hex,
/// one line per input.
pub(crate) fn protect_each(
    arg: &str,
    name: &str,
    mut one: impl FnMut(&str, &[u8]) -> Result<Vec<u8>>,
) -> Result<ExitCode> {
    let stdout = std::io::stdout();
    let mut w = std::io::BufWriter::new(stdout.lock());
    for_each_input(arg, name, |what, input| {
        let out = one(what, &input)?;
        writeln!(w, "{}", hex::encode(out))?;
        Ok(())
    })?;
    w.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Totals of a verify run.
#[derive(Debug, Default)]
pub(crate) struct VerifyTotals {
    pub ok: u64,
    pub drops: DropCounters,
}

/// Verifies each input with `one` (plain bytes or the drop reason). A single input prints the
/// plain hex on stdout or `DROP <reason>` on stderr; a batch prints one line per input on stdout
/// and the totals on stderr.
pub(crate) fn verify_each(
    arg: &str,
    name: &str,
    mut one: impl FnMut(&str, &[u8]) -> Result<std::result::Result<Vec<u8>, DropReason>>,
) -> Result<VerifyTotals> {
    let batch = arg == "-";
    let mut t = VerifyTotals::default();
    let stdout = std::io::stdout();
    let mut w = std::io::BufWriter::new(stdout.lock());
    for_each_input(arg, name, |what, input| {
        match one(what, &input)? {
            Ok(plain) => {
                t.ok += 1;
                writeln!(w, "{}", hex::encode(plain))?;
            }
            Err(reason) => {
                t.drops.bump(reason);
                if batch {
                    writeln!(w, "DROP {reason}")?;
                } else {
                    eprintln!("DROP {reason}");
                }
            }
        }
        Ok(())
    })?;
    w.flush()?;
    if batch {
        let drops: Vec<String> = t.drops.iter().map(|(r, n)| format!("{r}={n}")).collect();
        eprintln!(
            "verified {} dropped {}{}{}",
            t.ok,
            t.drops.total(),
            if drops.is_empty() { "" } else { ": " },
            drops.join(" ")
        );
    }
    Ok(t)
}

/// Exit code of a verify run: 1 when anything was dropped.
pub(crate) fn verify_exit(t: &VerifyTotals) -> ExitCode {
    if t.drops.total() == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn protect(sa: &SaArgs, seq: u64, frame: &str) -> Result<ExitCode> {
    let profile = sa.ivnae_profile()?;
    let m = sa.material()?;
    let mut tx = IvnAeTx::new(sa.provider(profile)?, &sa.params(profile, &m), seq)
        .map_err(|e| usage(e.to_string()))?;
    let mut out = vec![0u8; MAX_FRAME + 128];
    protect_each(frame, "FRAME", |what, plain| {
        if plain.len() > MAX_FRAME {
            return Err(usage(format!(
                "{what}: frame of {} bytes exceeds {MAX_FRAME}",
                plain.len()
            )));
        }
        let n = tx
            .protect(plain, &mut out)
            .map_err(|e| usage(format!("{what}: {e}")))?;
        Ok(out[..n].to_vec())
    })
}

/// The IVN-AE receive SA the options describe (also used by `pcap verify`).
pub(crate) fn ivnae_rx(sa: &SaArgs, replay_window: u32) -> Result<IvnAeRx> {
    let profile = sa.ivnae_profile()?;
    let m = sa.material()?;
    IvnAeRx::new(
        sa.provider(profile)?,
        &sa.params(profile, &m),
        replay_window,
    )
    .map_err(|e| usage(e.to_string()))
}

fn verify(sa: &SaArgs, replay_window: u32, frame: &str) -> Result<ExitCode> {
    let mut rx = ivnae_rx(sa, replay_window)?;
    let mut out = vec![0u8; MAX_FRAME];
    let t = verify_each(frame, "FRAME", |_, bytes| {
        Ok(rx.verify(bytes, &mut out).map(|n| out[..n].to_vec()))
    })?;
    Ok(verify_exit(&t))
}
