//! `ivnsec pcap verify`: checks every frame of a classic pcap capture offline with one receive SA
//! (IVN-AE, MACsec or ESP), the SA options being those of `ivnsec frame verify`. The SA state
//! (replay window, MACsec nextPN) carries over from frame to frame, as on a live receiver.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::output::Json;
use anyhow::Result;
use clap::Subcommand;
use ivnsec_node::frames::material::VerifySettings;
use ivnsec_node::frames::pcap_verify::{CaptureSettings, verify_capture};

use super::common::frame::SaArgs;
use super::common::frame::esp::EspVerifyOpts;
use super::common::frame::macsec::MacsecVerifyOpts;
use ivnsec_core::profile::NamedProfile;

#[derive(Subcommand, Debug)]
pub enum Args {
    /// Verify each frame of a capture (classic pcap, Ethernet) with one receive SA; prints
    /// `N ok`, `N drop <reason>` or `N skip <what>` per frame (N from 1, as tshark numbers
    /// frames), then the counters.
    #[command(after_help = "\
Frames of other protocols are skipped: an EtherType other than 0x88B5 for IVN-AE profiles,
other than 0x88E5 for MACsec, and for ESP anything but IPv4/IPv6 carrying ESP (protocol 50) or
UDP-encapsulated ESP on port 4500 (RFC 3948). Frames the capture cut short (snaplen) are skipped,
and so are malformed records (captured length above the original length), with the reason.
MACsec frames delivered without validation (--validate check|disabled) print `N not_validated
<status>`.

Exit codes: 0 every checked frame verified, 1 a frame was dropped or not validated, or frames
were read but every one was skipped (nothing was verified: stderr says so; often the wrong
--profile), 2 bad options or a bad capture file (the message names the record and its byte
offset). A capture that ends inside its last record (a writer killed mid-record) is checked up
to that record, which is reported as `N skip truncated record: …` and counted; the exit code
follows the verdicts (--fail-on-truncated makes it a bad file, exit 2).

Examples:
  ivnsec pcap verify --profile aes128-gcm --key 000102030405060708090a0b0c0d0e0f \\
      --iv 000000000000000000000000 capture.pcap
  ivnsec pcap verify --profile aes128-gcm --key 000102030405060708090a0b0c0d0e0f \\
      --json killed-sender.pcap")]
    Verify(Box<VerifyArgs>),
}

#[derive(clap::Args, Debug)]
pub struct VerifyArgs {
    /// Profile: an IVN-AE suite name, with `/auth` or `/conf` for AEAD suites (default conf);
    /// or a standard protocol profile (`macsec-…`, `esp-…`, `secoc-…`). `ivnsec suites` lists
    /// them.
    #[arg(long, value_parser = super::capture_profile_arg)]
    profile: NamedProfile,
    #[command(flatten)]
    sa: SaArgs,
    /// Replay window W: 0 accepts only increasing sequence numbers; otherwise a frame within
    /// W of the highest is accepted once; at most 65536.
    #[arg(long, default_value_t = 64,
          value_parser = super::replay_window_parser())]
    replay_window: u32,
    /// IVN-AE: also accept version 1 frames (a capture of a sender of the previous release,
    /// whose nonce has no key id); without it they are `drop bad_version`.
    /// Example: `ivnsec pcap verify --profile aes128-gcm --key … --accept-ivnae-v1 old.pcap`
    #[arg(long)]
    accept_ivnae_v1: bool,
    /// Print `{"frames": [{"index", "verdict", "reason"}], "counters": {...}}` instead of text
    /// (streamed frame by frame: memory does not grow with the capture).
    #[arg(long)]
    json: bool,
    /// Treat a capture that ends inside its last record (a writer killed mid-record) as a bad
    /// file (exit 2) instead of reporting that record as skipped and exiting by the verdicts.
    #[arg(long)]
    fail_on_truncated: bool,
    /// The capture (classic pcap with the Ethernet link type; pcapng: `editcap -F pcap IN OUT`;
    /// gzip, xz, zstd: decompress it first, e.g. `zcat car.pcap.gz > car.pcap`).
    file: PathBuf,
    // The protocol option groups last: each sets a help heading for what follows it.
    #[command(flatten)]
    macsec: MacsecVerifyOpts,
    #[command(flatten)]
    esp: EspVerifyOpts,
}

pub fn run(args: Args) -> Result<ExitCode> {
    match args {
        Args::Verify(a) => {
            let a = *a;
            let s = CaptureSettings {
                rx: VerifySettings {
                    sa: a.sa.settings(a.profile),
                    replay_window: a.replay_window,
                    accept_ivnae_v1: a.accept_ivnae_v1,
                    macsec: a.macsec.into(),
                    esp: a.esp.into(),
                    secoc: Default::default(),
                },
                json: a.json,
                allow_truncated: !a.fail_on_truncated,
                file: a.file,
            };
            let mut json = Json::claim(s.json)?;
            let t = verify_capture(&s, json.writer(), &mut std::io::stderr())?;
            Ok(ExitCode::from(t.exit_code()))
        }
    }
}
