//! A FreeRADIUS of the run's own for 802.1X experiments and tests (`ivnsec attack --eap`,
//! tests/testbed_ecus/dot1x.rs): a complete configuration written into a directory of the run
//! (EAP-TLS only, with the vehicle CA of an `ivnsec pki` directory and its CRL checked), started
//! in a namespace of the run's testbed with `freeradius -f -X`, never the host's service.
//!
//! The server certificate is the PKI's ECU certificate `radius` (issued if missing by
//! `ivnsec pki freeradius`'s writer, whose eap module the server runs; a revocation needs
//! [`write_config`] again, then [`FreeRadius::restart`]). The
//! virtual server copies the EAP Session-Id into the reply as EAP-Key-Name (what the
//! authenticator names the CAK by for TLS 1.3), and its debug output, kept in
//! [`FreeRadius::log`], shows the MS-MPPE keys it sent ([`FreeRadius::sent_msks`]): a test
//! compares them with the MSK a supplicant derived.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use ivnsec_net::sys::die_with_parent;
use ivnsec_net::testbed::netns_command;
use ivnsec_node::error::env_error;
use ivnsec_node::pki;

/// The name of the server certificate in the PKI.
pub const SERVER_ECU: &str = "radius";
/// The authentication port.
pub const PORT: u16 = 1812;
/// Longest wait for "Ready to process requests".
const READY_WITHIN: Duration = Duration::from_secs(20);
/// Lines of debug output kept.
const MAX_LOG_LINES: usize = 200_000;

/// A RADIUS client of the server: its address (or CIDR) and shared secret.
#[derive(Clone, Debug)]
pub struct Client {
    pub addr: String,
    pub secret: String,
}

/// A running FreeRADIUS; stopped (killed) when dropped.
pub struct FreeRadius {
    ns: String,
    dir: PathBuf,
    child: Option<Child>,
    log: Arc<Mutex<Vec<String>>>,
}

/// Writes the configuration: radiusd.conf (listen, clients, the virtual server), the
/// dictionary, and the eap module `ivnsec pki freeradius` writes for the PKI (EAP-TLS with the
/// vehicle CA and its CRL, TLS 1.2 and 1.3), in `dir/eap/`.
pub fn write_config(dir: &Path, pki_dir: &Path, clients: &[Client]) -> Result<()> {
    for d in [dir.to_path_buf(), dir.join("log"), dir.join("run")] {
        std::fs::create_dir_all(&d).with_context(|| format!("creating {}", d.display()))?;
    }
    pki::freeradius::write(pki_dir, &dir.join("eap"), SERVER_ECU)
        .context("writing FreeRADIUS's EAP-TLS module")?;
    std::fs::copy("/etc/freeradius/3.0/dictionary", dir.join("dictionary")).map_err(|e| {
        env_error(format!(
            "/etc/freeradius/3.0/dictionary: {e}; install FreeRADIUS (scripts/setup)"
        ))
    })?;
    let clients: String = clients
        .iter()
        .enumerate()
        .map(|(i, c)| {
            format!(
                "client c{i} {{\n    ipaddr = {}\n    secret = \"{}\"\n}}\n",
                c.addr, c.secret
            )
        })
        .collect();
    let d = dir.display();
    let conf = format!(
        "prefix = /usr
exec_prefix = /usr
sysconfdir = /etc
localstatedir = /var
sbindir = /usr/sbin
logdir = {d}/log
raddbdir = {d}
radacctdir = {d}/log
name = freeradius
confdir = ${{raddbdir}}
modconfdir = ${{confdir}}/mods-config
run_dir = {d}/run
db_dir = {d}
libdir = /usr/lib/freeradius
pidfile = ${{run_dir}}/radiusd.pid
max_request_time = 30
cleanup_delay = 5
max_requests = 16384
hostname_lookups = no
log {{
    destination = stdout
    colourise = no
}}
security {{
    allow_core_dumps = no
    max_attributes = 200
    reject_delay = 0
    status_server = yes
}}
listen {{
    type = auth
    ipaddr = *
    port = {PORT}
    virtual_server = default
}}
{clients}
modules {{
    $INCLUDE ${{confdir}}/eap/eap-tls.conf
}}
server default {{
    authorize {{
        eap
    }}
    authenticate {{
        eap
    }}
    post-auth {{
        if (&reply:EAP-Session-Id) {{
            update reply {{
                &EAP-Key-Name := &reply:EAP-Session-Id
            }}
        }}
    }}
}}
"
    );
    std::fs::write(dir.join("radiusd.conf"), conf)?;
    Ok(())
}

impl FreeRadius {
    /// Writes the configuration into `dir` and starts FreeRADIUS in namespace `ns`; returns
    /// once it is ready.
    pub fn start(ns: &str, dir: &Path, pki_dir: &Path, clients: &[Client]) -> Result<FreeRadius> {
        write_config(dir, pki_dir, clients)?;
        let mut r = FreeRadius {
            ns: ns.to_string(),
            dir: dir.to_path_buf(),
            child: None,
            log: Arc::new(Mutex::new(Vec::new())),
        };
        r.restart()?;
        Ok(r)
    }

    /// The configuration directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Starts it again (after [`FreeRadius::stop`]).
    pub fn restart(&mut self) -> Result<()> {
        self.stop();
        let mut cmd = netns_command(&self.ns, "freeradius");
        cmd.args(["-f", "-X", "-d"])
            .arg(&self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = die_with_parent(&mut cmd).spawn().map_err(|e| {
            env_error(format!(
                "starting freeradius: {e}; install it (scripts/setup)"
            ))
        })?;
        let (tx, rx) = std::sync::mpsc::channel();
        for out in [
            child
                .stdout
                .take()
                .map(|o| Box::new(o) as Box<dyn std::io::Read + Send>),
            child
                .stderr
                .take()
                .map(|o| Box::new(o) as Box<dyn std::io::Read + Send>),
        ]
        .into_iter()
        .flatten()
        {
            let (log, tx) = (self.log.clone(), tx.clone());
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines().map_while(Result::ok) {
                    if line.contains("Ready to process requests") {
                        let _ = tx.send(());
                    }
                    let mut l = log.lock().unwrap_or_else(|e| e.into_inner());
                    if l.len() < MAX_LOG_LINES {
                        l.push(line);
                    }
                }
            });
        }
        self.child = Some(child);
        let t0 = Instant::now();
        while t0.elapsed() < READY_WITHIN {
            if rx.recv_timeout(Duration::from_millis(200)).is_ok() {
                return Ok(());
            }
            if let Some(c) = self.child.as_mut()
                && let Ok(Some(st)) = c.try_wait()
            {
                bail!(
                    "freeradius ended ({st}) before it was ready:\n{}",
                    self.log_tail(40)
                );
            }
        }
        bail!(
            "freeradius not ready within {READY_WITHIN:?}:\n{}",
            self.log_tail(40)
        )
    }

    /// Stops it (SIGKILL: a server that is gone, as when its host fails).
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Its debug output so far.
    pub fn log(&self) -> String {
        self.log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .join("\n")
    }

    /// The last `n` lines of its debug output.
    pub fn log_tail(&self, n: usize) -> String {
        let l = self.log.lock().unwrap_or_else(|e| e.into_inner());
        l[l.len().saturating_sub(n)..].join("\n")
    }

    /// The MSKs it sent (MS-MPPE-Recv-Key ‖ MS-MPPE-Send-Key of each Access-Accept), in order.
    pub fn sent_msks(&self) -> Vec<[u8; 64]> {
        let l = self.log.lock().unwrap_or_else(|e| e.into_inner());
        let value = |line: &str, attr: &str| -> Option<Vec<u8>> {
            let h = line.split(&format!("{attr} = 0x")).nth(1)?;
            hex::decode(h.trim()).ok()
        };
        let mut out = Vec::new();
        let mut recv: Option<Vec<u8>> = None;
        for line in l.iter() {
            if let Some(r) = value(line, "MS-MPPE-Recv-Key") {
                recv = Some(r);
            } else if let Some(s) = value(line, "MS-MPPE-Send-Key")
                && let Some(r) = recv.take()
                && r.len() == 32
                && s.len() == 32
            {
                let mut m = [0u8; 64];
                m[..32].copy_from_slice(&r);
                m[32..].copy_from_slice(&s);
                out.push(m);
            }
        }
        out
    }
}

impl Drop for FreeRadius {
    fn drop(&mut self) {
        self.stop();
    }
}
