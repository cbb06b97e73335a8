//! A FreeRADIUS of the test's own: the lab's runner ([`ivnsec_lab::radius::FreeRadius`]: a
//! complete configuration with the EAP-TLS module of `ivnsec pki freeradius`, run in the test's
//! namespace with `freeradius -f -X`, killed on drop, its debug output kept), with the
//! unwrapping a test wants. The host's FreeRADIUS service is never used.

use std::path::Path;

use ivnsec_lab::radius::{Client, FreeRadius as Server};

/// A running FreeRADIUS (killed on drop).
pub struct FreeRadius(pub Server);

impl FreeRadius {
    /// Writes the configuration under `workdir/raddb` for the PKI `pki` and the RADIUS clients
    /// `clients` (address or CIDR, secret), then starts FreeRADIUS in `ns` on port 1812 and
    /// waits until it is ready.
    pub fn start(ns: &str, workdir: &Path, pki: &Path, clients: &[(&str, &str)]) -> FreeRadius {
        let clients: Vec<Client> = clients
            .iter()
            .map(|(a, s)| Client {
                addr: a.to_string(),
                secret: s.to_string(),
            })
            .collect();
        FreeRadius(Server::start(ns, &workdir.join("raddb"), pki, &clients).unwrap())
    }

    /// The configuration directory (`-d`).
    pub fn dir(&self) -> &Path {
        self.0.dir()
    }

    /// Everything FreeRADIUS printed.
    pub fn log(&self) -> String {
        self.0.log()
    }

    /// The MSK of every Access-Accept it sent, in order (MS-MPPE-Recv-Key ‖ MS-MPPE-Send-Key).
    pub fn sent_msk(&self) -> Vec<[u8; 64]> {
        self.0.sent_msks()
    }

    /// Stops it (SIGKILL).
    pub fn stop(&mut self) {
        self.0.stop();
    }

    /// Starts it again.
    pub fn restart(&mut self) {
        self.0.restart().unwrap();
    }
}
