//! `ivnsec frame protect|verify` for `esp-…` profiles (being written).

use std::process::ExitCode;

use anyhow::Result;

use super::frame::SaArgs;

/// Options of `frame protect` that only esp profiles take.
#[derive(clap::Args, Debug, Default)]
pub struct EspProtectOpts {}

/// Options of `frame verify` that only esp profiles take.
#[derive(clap::Args, Debug, Default)]
pub struct EspVerifyOpts {}

pub fn protect(_sa: &SaArgs, _seq: Option<u64>, _opts: &EspProtectOpts, _frame: &str) -> Result<ExitCode> {
    Err(crate::cli::usage("ESP profiles are not available yet"))
}

pub fn verify(_sa: &SaArgs, _replay_window: u32, _opts: &EspVerifyOpts, _frame: &str) -> Result<ExitCode> {
    Err(crate::cli::usage("ESP profiles are not available yet"))
}
