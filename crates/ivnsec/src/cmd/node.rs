//! `ivnsec node ROLE`: a node role of an experiment. Not for people: the experiment commands
//! start it inside an ECU namespace and write its settings and keys to its stdin.

use std::process::ExitCode;

use anyhow::Result;
use ivnsec_lab::{attack, camera, pingpong, tdma, throughput, underload};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The role: `pingpong` (initiator or responder), `throughput` (sender or receiver), as the
    /// spec says, `attack`, `mka-attack`, `eap-attack`, `camera` (camera ECU or consumer), `underload` (sensor or
    /// consumer of underload/playback), or `tdma` (ECU or switch probe).
    pub kind: String,
}

pub fn run(a: Args) -> Result<ExitCode> {
    match a.kind.as_str() {
        "pingpong" => pingpong::node::run()?,
        "throughput" => throughput::run_node()?,
        "attack" => attack::node::run()?,
        "mka-attack" => attack::mka::node()?,
        "eap-attack" => attack::eap::node()?,
        "camera" => camera::node::run()?,
        "underload" => underload::node::run()?,
        "tdma" => tdma::node::run()?,
        other => return Err(crate::error::usage(format!("unknown node role `{other}`"))),
    }
    Ok(ExitCode::SUCCESS)
}
