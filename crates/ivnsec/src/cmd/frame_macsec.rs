//! `ivnsec frame protect|verify` for `macsec-…` profiles (being written).

use std::process::ExitCode;

use anyhow::Result;

use super::frame::SaArgs;

/// Options of `frame protect` that only macsec profiles take.
#[derive(clap::Args, Debug, Default)]
pub struct MacsecProtectOpts {}

/// Options of `frame verify` that only macsec profiles take.
#[derive(clap::Args, Debug, Default)]
pub struct MacsecVerifyOpts {}

pub fn protect(_sa: &SaArgs, _opts: &MacsecProtectOpts, _frame: &str) -> Result<ExitCode> {
    Err(crate::cli::usage("MACsec profiles are not available yet"))
}

pub fn verify(_sa: &SaArgs, _replay_window: u32, _opts: &MacsecVerifyOpts, _frame: &str) -> Result<ExitCode> {
    Err(crate::cli::usage("MACsec profiles are not available yet"))
}
