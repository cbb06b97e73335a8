//! MKA (`mka` of cli and of testbed_ecus, `keyserver_mka`): PSK files, the `sensors:N` testbed
//! whose switch forwards the PAE group address, the ECUs running `macsec up` with MKA on it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use ivnsec_net::testbed::Testbed;
use ivnsec_net::topology::Topology;
use serde_json::Value;

use super::net::ping_counts;
use super::{BIN, Proc, TempDir, spawn_until_ready, text};

pub fn keygen_mka(d: &TempDir, name: &str, extra: &[&str]) -> PathBuf {
    let p = d.path(name);
    let o = d
        .cmd()
        .args(["keygen", "--mka", "--out"])
        .arg(&p)
        .args(extra)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    p
}

/// (cak, ckn) in hex of a PSK file.
pub fn psk_fields(p: &Path) -> (String, String) {
    let t = std::fs::read_to_string(p).unwrap();
    let field = |k: &str| {
        t.lines()
            .find_map(|l| l.strip_prefix(&format!("{k} = \"")))
            .and_then(|r| r.strip_suffix('"'))
            .unwrap_or_else(|| panic!("{k} in {t}"))
            .to_string()
    };
    (field("cak"), field("ckn"))
}

/// Transmits under an agreed SAK with `peers` live peers.
pub fn secured(st: &Value, peers: usize) -> bool {
    !st["tx"]["encoding_an"].is_null()
        && st["key_source_state"]["peers"]
            .as_array()
            .is_some_and(|p| p.iter().filter(|p| p["live"] == true).count() == peers)
        && st["key_source_state"]["latest"]["tx"] == true
}

/// The fixture of the MKA tests: a testbed of `n` sensors and a consumer on one switch that
/// forwards the PAE group address (a Linux bridge keeps 01-80-C2-00-00-03 to itself unless
/// `group_fwd_mask` says otherwise); IPv4 addresses on the ECUs' plain interfaces if `ipv4`.
pub fn pae_testbed(d: &TempDir, n: u16, ipv4: bool) -> Testbed {
    let tb = super::net::testbed(d, &Topology::Sensors(n), ipv4);
    for sw in tb.state().nodes.iter().filter(|n| n.kind == "switch") {
        let o = Command::new("ip")
            .args(["-n", &sw.namespace, "link", "set", "br0", "type", "bridge"])
            .args(["group_fwd_mask", "8"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o.stderr));
    }
    tb
}

/// One ECU of a [`pae_testbed`] running `macsec up` with MKA (a PSK or the key server's CAK)
/// on its `eth0`, with a TAP named `tap`.
pub struct Ecu {
    pub name: String,
    pub ns: String,
    pub mac: String,
    pub sci: String,
    pub addr: String,
    pub dir: PathBuf,
    pub tap: &'static str,
}

impl Ecu {
    pub fn new(tb: &Testbed, d: &TempDir, name: &str, addr: &str, tap: &'static str) -> Ecu {
        let n = tb.state().node(name).unwrap();
        let mac = n.interfaces[0].mac.clone();
        let dir = d.path(name);
        std::fs::create_dir_all(&dir).unwrap();
        Ecu {
            name: name.to_string(),
            ns: n.namespace.clone(),
            sci: format!("{}0001", mac.replace(':', "")),
            mac,
            addr: addr.to_string(),
            dir,
            tap,
        }
    }
    pub fn exec(&self, program: &str) -> Command {
        super::net::exec(&self.ns, program)
    }
    pub fn events_file(&self) -> PathBuf {
        self.dir.join("events.jsonl")
    }
    /// The `--events` lines, every one a JSON document.
    pub fn events(&self) -> Vec<Value> {
        std::fs::read_to_string(self.events_file())
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
    /// The `--events` lines written so far (a line being written is left out).
    pub fn events_so_far(&self) -> Vec<Value> {
        std::fs::read_to_string(self.events_file())
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }
    /// The options of `macsec up` every MKA ECU runs with: its TAP on `eth0`, its state, run
    /// directory and events.
    fn macsec_up(&self) -> Command {
        let mut c = self.exec(BIN);
        c.args(["macsec", "up", "--iface", "eth0", "--tap", self.tap])
            .args(["--profile", "macsec-gcm-aes-128"])
            .arg("--state-dir")
            .arg(self.dir.join("state"))
            .arg("--run-dir")
            .arg(self.dir.join("run"))
            .arg("--events")
            .arg(self.events_file());
        c
    }
    /// Waits for its TAP, gives the TAP its address.
    fn started(&self, c: Command) -> Proc {
        let pr = spawn_until_ready(c, "running until", &format!("macsec up in {}", self.ns));
        self.ip(&["addr", "add", &format!("{}/24", self.addr), "dev", self.tap]);
        pr
    }
    /// Starts `macsec up --psk PSK EXTRA`, waits for its TAP, gives the TAP its address.
    pub fn up_psk(&self, psk: &Path, extra: &[&str]) -> Proc {
        let mut c = self.macsec_up();
        c.arg("--psk")
            .arg(psk)
            .args(["--reserve-block", "16", "--json"])
            .args(extra);
        self.started(c)
    }
    /// Starts `macsec up --keyserver KEYSERVER` with its certificate of the PKI in `pki`, MKA
    /// priority `prio` and a MKA life time of `life` seconds.
    pub fn up_keyserver(&self, pki: &Path, keyserver: &str, prio: &str, life: &str) -> Proc {
        let mut c = self.macsec_up();
        c.args(["--keyserver", keyserver])
            .arg("--cert")
            .arg(pki.join(format!("ecu/{}.pem", self.name)))
            .arg("--key")
            .arg(pki.join(format!("ecu/{}.key", self.name)))
            .arg("--ca")
            .arg(pki.join("ca.pem"))
            .args(["--hello-seconds", "1", "--life-seconds", life])
            .args(["--ramp-up-ms", "20", "--priority", prio, "--json"]);
        self.started(c)
    }
    /// Starts `macsec up EXTRA` (802.1X and other key sources the caller spells out), waits
    /// for its TAP, gives the TAP its address.
    pub fn up_with(&self, extra: &[&str]) -> Proc {
        let mut c = self.macsec_up();
        c.args(["--reserve-block", "16", "--json"]).args(extra);
        self.started(c)
    }
    pub fn ip(&self, args: &[&str]) {
        let o = Command::new("ip")
            .args(["-n", &self.ns])
            .args(args)
            .output()
            .unwrap();
        assert!(o.status.success(), "ip {args:?}: {}", text(&o.stderr));
    }
    /// `macsec status --json` of its instance (`Value::Null` when there is none).
    pub fn status(&self) -> Value {
        let o = self
            .exec(BIN)
            .args(["macsec", "status", "--json", "--run-dir"])
            .arg(self.dir.join("run"))
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
        v[0].clone()
    }
    pub fn tap_exists(&self) -> bool {
        Command::new("ip")
            .args(["-n", &self.ns, "link", "show", self.tap])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap()
            .success()
    }
    /// `ping` from this ECU; (transmitted, received).
    pub fn ping(&self, to: &str, args: &[&str]) -> (u64, u64) {
        ping_counts(&self.exec("ping").args(args).arg(to).output().unwrap())
    }
}

/// What a failed check prints: each ECU's status and its events.
pub fn diagnose(ecus: &[&Ecu]) -> String {
    let mut out = String::new();
    for e in ecus {
        out.push_str(&format!(
            "== {} in {} ({})\nstatus: {}\n",
            e.name,
            e.ns,
            e.sci,
            e.status()
        ));
        for ev in e.events_so_far() {
            out.push_str(&format!("  {ev}\n"));
        }
    }
    out
}
