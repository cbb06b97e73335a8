//! `ivnsec crypto-bench` (being written).

use std::process::ExitCode;

use anyhow::Result;

#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_args: Args) -> Result<ExitCode> {
    Err(crate::cli::usage("crypto-bench is not available yet"))
}
