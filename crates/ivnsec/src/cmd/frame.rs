//! `ivnsec frame protect|verify`: single frames as hex, or one hex frame per line on stdin with SA
//! state kept across lines (so replay protection works over a batch).

use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;
use ivnsec_core::profile::NamedProfile;
use ivnsec_node::frames::batch;
use ivnsec_node::frames::material::{ProtectSettings, VerifySettings};

use super::common::frame::SaArgs;

#[derive(Subcommand, Debug)]
pub enum Args {
    /// Protect one unit under a profile and print it in hex: a plain Ethernet frame (dst ‖ src
    /// ‖ EtherType ‖ payload) as IVN-AE or MACsec, an IP packet as ESP, an Authentic I-PDU as
    /// SecOC.
    #[command(
        after_help = "With `-`, each stdin line is answered by the protected frame in hex, or by
`DROP <reason>` (`malformed`: not hex or not UTF-8; `oversize`: above the largest frame;
`truncated`: too short, a blank line included) with the line named on stderr, and the batch goes
on: one answer per line. Lines are read with a bound. The exit code is 2 when any line was refused
(or the frame argument is empty or not hex). Without --iv, stderr says which IV was used.
Profiles: IVN-AE suites, `macsec-…` (--sci, --an, --pn), `esp-…` (--spi, --seq), `secoc-…`
(--data-id, --freshness); `ivnsec suites` lists them. See docs/frame.md, docs/macsec.md,
docs/esp.md, docs/secoc.md.

Examples:
  ivnsec frame protect --profile aes128-gcm --key 000102030405060708090a0b0c0d0e0f \\
      --seq 1 020000000002020000000001080045000014
  ivnsec frame protect --profile macsec-gcm-aes-128 --key ad7a2bd03eac835a6f620fdcb506b345 \\
      --sci 0200000000010001 --an 2 --pn 1 020000000002020000000001080045000014
  ivnsec frame protect --profile secoc-cmac-aes128 --key 2b7e151628aed2a6abf7158809cf4f3c \\
      --data-id 0x6bc1 --freshness 7 0102030405"
    )]
    Protect {
        #[command(flatten)]
        profile: FrameProfileArg,
        #[command(flatten)]
        sa: SaArgs,
        /// Sequence number of the (first) frame, ≥ 1 (IVN-AE, ESP). With `-`, frames are numbered
        /// upward from it.
        #[arg(long)]
        seq: Option<u64>,
        #[command(flatten)]
        macsec: super::common::frame::macsec::MacsecProtectOpts,
        #[command(flatten)]
        esp: super::common::frame::esp::EspProtectOpts,
        #[command(flatten)]
        secoc: super::common::frame::secoc::SecocProtectOpts,
        /// Hex of the plain frame (IP packet for ESP, Authentic I-PDU for SecOC), or `-` to read
        /// one per line from stdin.
        frame: String,
    },
    /// Verify one protected unit (IVN-AE or MACsec frame, ESP packet, SecOC Secured I-PDU);
    /// prints the recovered plain unit (exit 0) or the drop reason on stderr (exit 1).
    #[command(
        after_help = "With `-`, each stdin line is answered, in order, by the plain frame in hex or by
`DROP <reason>`; the exit code is 1 when any frame was dropped. A line that is no frame answers
for itself and the batch goes on: blank `DROP truncated` (a zero-byte frame), not hex or not
UTF-8 `DROP malformed`, above the largest frame `DROP oversize` (read with a bound, never held
whole); stderr names the line. A frame argument that is empty or not hex is a usage error (exit
2). Profiles and their SA options as for `frame protect` (IVN-AE, MACsec, ESP, SecOC). See
docs/frame.md.

Example (two frames protected under one key, verified as a batch):
  K=000102030405060708090a0b0c0d0e0f
  F1=$(ivnsec frame protect --profile aes128-gcm --key $K --seq 1 020000000002020000000001080045)
  F2=$(ivnsec frame protect --profile aes128-gcm --key $K --seq 2 020000000002020000000001080046)
  printf '%s\\n' \"$F1\" \"$F2\" | ivnsec frame verify --profile aes128-gcm --key $K -"
    )]
    Verify {
        #[command(flatten)]
        profile: FrameProfileArg,
        #[command(flatten)]
        sa: SaArgs,
        /// Replay window W: 0 accepts only increasing sequence numbers; otherwise a frame within
        /// W of the highest is accepted once; at most 65536. (SecOC: see --acceptance-window.)
        #[arg(long, default_value_t = 64,
          value_parser = super::replay_window_parser())]
        replay_window: u32,
        /// IVN-AE: also accept version 1 frames (from a sender of the previous release, whose
        /// nonce has no key id), verified with the version 1 nonce; without it they are
        /// `DROP bad_version`. Senders always write version 2. See docs/wire-ivnae.md §6.
        /// Example: `ivnsec frame verify --profile aes128-gcm --key … --key-id 1
        /// --accept-ivnae-v1 FRAME`
        #[arg(long)]
        accept_ivnae_v1: bool,
        #[command(flatten)]
        macsec: super::common::frame::macsec::MacsecVerifyOpts,
        #[command(flatten)]
        esp: super::common::frame::esp::EspVerifyOpts,
        #[command(flatten)]
        secoc: super::common::frame::secoc::SecocVerifyOpts,
        /// Hex of the protected frame (ESP packet for ESP, Secured I-PDU for SecOC), or `-` to
        /// read one per line from stdin.
        frame: String,
    },
}

/// The profile of `frame protect|verify`, parsed here (a name that is no profile is worded as
/// the frame tools word each family's).
#[derive(clap::Args, Debug)]
pub struct FrameProfileArg {
    /// Profile: an IVN-AE suite name, with `/auth` or `/conf` for AEAD suites (default conf);
    /// or a standard protocol profile (`macsec-…`, `esp-…`, `secoc-…`). `ivnsec suites` lists
    /// them.
    #[arg(long, value_parser = super::frame_profile_arg)]
    pub profile: NamedProfile,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    let mut stderr = std::io::stderr();
    match args {
        Args::Protect {
            profile,
            sa,
            seq,
            macsec,
            esp,
            secoc,
            frame,
        } => {
            let s = ProtectSettings {
                sa: sa.settings(profile.profile),
                seq,
                macsec: macsec.into(),
                esp: esp.into(),
                secoc: secoc.into(),
            };
            let o = batch::protect(&s, &frame, stdin.lock(), stdout.lock(), &mut stderr)?;
            Ok(ExitCode::from(o.exit_code()))
        }
        Args::Verify {
            profile,
            sa,
            replay_window,
            accept_ivnae_v1,
            macsec,
            esp,
            secoc,
            frame,
        } => {
            let s = VerifySettings {
                sa: sa.settings(profile.profile),
                replay_window,
                accept_ivnae_v1,
                macsec: macsec.into(),
                esp: esp.into(),
                secoc: secoc.into(),
            };
            let t = batch::verify(&s, &frame, stdin.lock(), stdout.lock(), &mut stderr)?;
            Ok(ExitCode::from(t.exit_code()))
        }
    }
}
