//! The node roles of an `ivnsec attack` run on its testbed, and the gateways the legacy ECUs
//! talk through on a bump-in-the-wire testbed: the data the orchestration (`run.rs`,
//! `mka_run.rs`) and the gateway part (`gateway.rs`) share.

use std::path::PathBuf;

use ivnsec_net::testbed::TestbedState;

/// The three roles on the testbed.
pub(crate) struct Roles {
    pub(crate) state: TestbedState,
    pub(crate) sender: String,
    pub(crate) receiver: String,
    pub(crate) attacker: String,
    /// The attacker's interface in its namespace.
    pub(crate) attacker_if: String,
    /// On a bump-in-the-wire testbed: the gateways the legacy ECUs talk through.
    pub(crate) gateway: Option<Gateways>,
}

/// The gateways of the run: where their status files are, and the sending gateway's MAC.
#[derive(Clone, Debug)]
pub(crate) struct Gateways {
    /// Gateway name and its run directory (status file under `macsec/`).
    pub(crate) run_dirs: Vec<(String, PathBuf)>,
    /// The protected port of the gateway in front of the legitimate sender.
    pub(crate) sender_gw_mac: [u8; 6],
    /// The member in front of the receiver (whose drops are the result's `dropped`).
    pub(crate) victim: String,
}
