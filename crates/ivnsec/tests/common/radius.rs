//! A FreeRADIUS of the test's own: a complete minimal configuration under a work directory (the
//! EAP-TLS module from `ivnsec pki freeradius`), run in a namespace with `freeradius -f -X`, its
//! debug output kept in a file that the test reads (the MS-MPPE keys it sent, why it refused).
//!
//! The host's FreeRADIUS service is never used: this one has its own configuration directory,
//! runs in the test's namespace and is killed when dropped.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::proc::Proc;
use super::{BIN, stderr, stdout};

/// The line FreeRADIUS prints once it listens.
const READY: &str = "Ready to process requests";

/// A running FreeRADIUS (SIGKILLed on drop).
pub struct FreeRadius {
    ns: String,
    dir: PathBuf,
    log: PathBuf,
    proc: Option<Proc>,
}

impl FreeRadius {
    /// Writes the configuration under `workdir/raddb` for the PKI `pki` and the RADIUS clients
    /// `clients` (address or CIDR, secret), then starts FreeRADIUS in `ns` on port 1812 and
    /// waits until it is ready.
    pub fn start(ns: &str, workdir: &Path, pki: &Path, clients: &[(&str, &str)]) -> FreeRadius {
        let dir = workdir.join("raddb");
        std::fs::create_dir_all(dir.join("run")).unwrap();
        let o = Command::new(BIN)
            .args(["pki", "freeradius", "--dir"])
            .arg(pki)
            .arg("--out")
            .arg(dir.join("eap"))
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "pki freeradius: {}{}",
            stdout(&o),
            stderr(&o)
        );
        write_config(&dir, clients);
        let mut fr = FreeRadius {
            ns: ns.to_string(),
            log: workdir.join("freeradius.log"),
            dir,
            proc: None,
        };
        fr.restart();
        fr
    }

    /// The configuration directory (`-d`).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Everything FreeRADIUS printed since it was (re)started.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The MSK of every Access-Accept it sent, in order: MS-MPPE-Recv-Key ‖ MS-MPPE-Send-Key as
    /// its debug output prints them.
    pub fn sent_msk(&self) -> Vec<[u8; 64]> {
        let log = self.log();
        let mut out = Vec::new();
        let mut recv: Option<Vec<u8>> = None;
        for line in log.lines() {
            let Some((name, value)) = line.split_once(" = 0x") else {
                continue;
            };
            let Ok(v) = hex::decode(value.trim()) else {
                continue;
            };
            if name.trim_end().ends_with("MS-MPPE-Recv-Key") {
                recv = Some(v);
            } else if name.trim_end().ends_with("MS-MPPE-Send-Key")
                && let Some(r) = recv.take()
                && r.len() == 32
                && v.len() == 32
            {
                let mut m = [0u8; 64];
                m[..32].copy_from_slice(&r);
                m[32..].copy_from_slice(&v);
                out.push(m);
            }
        }
        out
    }

    /// Stops it (SIGKILL).
    pub fn stop(&mut self) {
        self.proc = None;
    }

    /// Starts it again (a new log), e.g. after `ivnsec pki freeradius` wrote a new CRL.
    pub fn restart(&mut self) {
        self.stop();
        let log = File::create(&self.log).unwrap();
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ns, "freeradius", "-f", "-X", "-d"])
            .arg(&self.dir)
            .args(["-l", "stdout"])
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        let proc = Proc(Some(c.spawn().unwrap()));
        self.wait_ready(proc, Instant::now() + Duration::from_secs(15));
    }

    fn wait_ready(&mut self, mut p: Proc, deadline: Instant) {
        loop {
            let l = self.log();
            if l.contains(READY) {
                self.proc = Some(p);
                return;
            }
            if let Ok(Some(st)) = p.child().try_wait() {
                panic!("freeradius ended ({st}) before `{READY}`:\n{l}");
            }
            assert!(
                Instant::now() < deadline,
                "freeradius not ready after 15 s:\n{l}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// radiusd.conf, clients.conf and the dictionary: only what an EAP-TLS server needs. The server
/// runs as the user that starts it (no `user`/`group`), logs to stdout, and copies the EAP
/// Session-Id to the reply as EAP-Key-Name (what the default site does only when asked).
fn write_config(dir: &Path, clients: &[(&str, &str)]) {
    let d = dir.display();
    std::fs::write(
        dir.join("dictionary"),
        "$INCLUDE /usr/share/freeradius/dictionary\n",
    )
    .unwrap();
    let mut cl = String::new();
    for (i, (addr, secret)) in clients.iter().enumerate() {
        cl.push_str(&format!(
            "client c{i} {{\n\tipaddr = {addr}\n\tsecret = \"{secret}\"\n}}\n"
        ));
    }
    std::fs::write(dir.join("clients.conf"), cl).unwrap();
    let conf = format!(
        r#"prefix = /usr
exec_prefix = /usr
sysconfdir = /etc
localstatedir = /var
sbindir = /usr/sbin
logdir = {d}/run
raddbdir = {d}
radacctdir = {d}/run
name = freeradius
confdir = {d}
modconfdir = {d}
certdir = {d}
cadir = {d}
run_dir = {d}/run
db_dir = {d}
libdir = /usr/lib/freeradius
pidfile = {d}/run/radiusd.pid
max_request_time = 30
cleanup_delay = 5
max_requests = 1024
hostname_lookups = no
log {{
	destination = stdout
	colourise = no
	auth = yes
}}
security {{
	allow_core_dumps = no
	max_attributes = 200
	reject_delay = 0
	status_server = yes
}}
thread pool {{
	start_servers = 1
	max_servers = 4
	min_spare_servers = 1
	max_spare_servers = 4
	max_requests_per_server = 0
}}
$INCLUDE clients.conf
modules {{
	$INCLUDE eap/eap-tls.conf
}}
server default {{
	listen {{
		type = auth
		ipaddr = *
		port = 1812
	}}
	authorize {{
		eap {{
			ok = return
		}}
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
		Post-Auth-Type REJECT {{
			eap
		}}
	}}
}}
"#
    );
    std::fs::write(dir.join("radiusd.conf"), conf).unwrap();
}
