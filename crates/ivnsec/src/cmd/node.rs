//! `ivnsec node ROLE`: a node role of an experiment. Not for people: the experiment commands
//! start it inside an ECU namespace with its settings in `$IVNSEC_NODE_SPEC`.

use std::process::ExitCode;

use anyhow::Result;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The role: `pingpong` (initiator or responder), `throughput` (sender or receiver), as the
    /// spec says, `attack`, `camera` (camera ECU or consumer), or `underload` (sensor or
    /// consumer of underload/playback).
    pub kind: String,
}

pub fn run(a: Args) -> Result<ExitCode> {
    match a.kind.as_str() {
        "pingpong" => crate::node::pingpong::run_from_env()?,
        "throughput" => crate::node::throughput::run_from_env()?,
        "attack" => crate::node::attack::run_from_env()?,
        "camera" => crate::node::camera::run_from_env()?,
        "underload" => crate::node::underload::run_from_env()?,
        other => return Err(crate::cli::usage(format!("unknown node role `{other}`"))),
    }
    Ok(ExitCode::SUCCESS)
}
