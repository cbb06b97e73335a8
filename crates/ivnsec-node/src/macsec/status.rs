//! What a running `ivnsec macsec up` shows of itself, and the cleanup after one that was killed.
//!
//! - **Status file**: `<run dir>/macsec/<TAP>.<netns>.json` (run dir default `/run/ivnsec`;
//!   `<netns>` the inode of this process's network namespace, so two namespaces may each run a
//!   TAP of the same name). Rewritten every half second (temporary file, rename) with the SAs,
//!   PNs and counters; removed when the instance stops. `ivnsec macsec status` reads the files of
//!   the caller's namespace; a file whose process is gone is reported as stale.
//! - **Events file** (`--events FILE`): one JSON object per line, appended: `started`,
//!   `sa_installed`, `sa_enabled`, `sa_retired`, `icv_failure` and `unknown_sci` (with the
//!   number of frames since the last such line, at most one line per kind and SC every 100 ms),
//!   `pn_exhausted`, `tx_stopped`, `stopped`; with MKA also `mka_started`, `peer_live`,
//!   `peer_lost`, `key_server_elected`, `sak_distributed`, `sak_installed`, `sak_retired` and
//!   `mka_icv_failure` ([`super::mka`]). Each has `time` (Unix seconds) and `event`.
//! - **After a kill**: the TAP is gone with the process (the kernel closes its descriptor, and a
//!   TAP that is not persistent goes with it); only the status file stays. `ivnsec macsec down`
//!   stops a running instance (SIGTERM, then waits) or removes a stale status file, and removes
//!   the TAP it names if an interface of that name is still a TAP of this namespace.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use ivnsec_core::sa::DropReason;
use ivnsec_core::sa::macsec::{RxCounters, TxCounters};
use serde_json::{Value, json};

use super::{KeySource, SecyControl, sci_hex};
use crate::error::{env_error, usage};

/// Default run directory (`--run-dir`).
pub const DEFAULT_RUN_DIR: &str = "/run/ivnsec";
/// Largest status file read.
const MAX_STATUS: u64 = 1 << 20;

/// Seconds since the Unix epoch.
pub fn now_unix() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// The inode of this process's network namespace (`/proc/self/ns/net` → `net:[N]`).
pub fn netns_id() -> Result<u64> {
    let l = fs::read_link("/proc/self/ns/net").context("reading /proc/self/ns/net")?;
    let s = l.to_string_lossy();
    s.strip_prefix("net:[")
        .and_then(|r| r.strip_suffix(']'))
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| anyhow::anyhow!("unexpected network namespace link `{s}`"))
}

fn dir(run_dir: &Path) -> PathBuf {
    run_dir.join("macsec")
}

/// The status file of TAP `tap` in this network namespace.
pub fn path(run_dir: &Path, tap: &str) -> Result<PathBuf> {
    Ok(dir(run_dir).join(format!("{tap}.{}.json", netns_id()?)))
}

/// Whether process `pid` is alive and is an `ivnsec macsec` or `ivnsec gateway` process.
pub fn instance_alive(pid: u64) -> bool {
    let Ok(cmd) = fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let args: Vec<&[u8]> = cmd.split(|&b| b == 0).collect();
    args.iter().any(|a| a.ends_with(b"ivnsec"))
        && args.iter().any(|a| *a == b"macsec" || *a == b"gateway")
}

/// A status file read back.
#[derive(Debug)]
pub struct Found {
    pub path: PathBuf,
    pub status: Value,
    pub alive: bool,
}

fn read_status(p: &Path) -> Result<Value> {
    let f = File::open(p).with_context(|| format!("reading {}", p.display()))?;
    let mut s = String::new();
    f.take(MAX_STATUS)
        .read_to_string(&mut s)
        .with_context(|| format!("reading {}", p.display()))?;
    serde_json::from_str(&s).with_context(|| format!("{}: not a status file", p.display()))
}

/// The status files of this namespace (of `tap` only, when given).
pub fn find(run_dir: &Path, tap: Option<&str>) -> Result<Vec<Found>> {
    let ns = netns_id()?;
    let suffix = format!(".{ns}.json");
    let rd = match fs::read_dir(dir(run_dir)) {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).context(format!("listing {}", dir(run_dir).display())),
    };
    let mut out = Vec::new();
    for e in rd.take(10_000).flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(t) = name.strip_suffix(&suffix) else {
            continue;
        };
        if tap.is_some_and(|want| want != t) {
            continue;
        }
        let p = e.path();
        let Ok(status) = read_status(&p) else {
            continue;
        };
        let alive = status["pid"].as_u64().is_some_and(instance_alive);
        out.push(Found {
            path: p,
            status,
            alive,
        });
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// The status file of a running instance: claimed at start (a live instance of the same TAP
/// in this namespace is refused, a stale file replaced), written atomically, removed at stop.
#[derive(Debug)]
pub struct StatusFile {
    path: PathBuf,
    tmp: PathBuf,
}

impl StatusFile {
    pub fn claim(run_dir: &Path, tap: &str) -> Result<StatusFile> {
        let d = dir(run_dir);
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(&d)
            .map_err(|e| {
                env_error(format!(
                    "--run-dir: cannot create {}: {e}; give a writable --run-dir",
                    d.display()
                ))
            })?;
        let path = path(run_dir, tap)?;
        if path.exists() {
            match read_status(&path) {
                Ok(v) if v["pid"].as_u64().is_some_and(instance_alive) => {
                    return Err(usage(format!(
                        "an `ivnsec macsec up` for TAP {tap} already runs in this network \
                         namespace (pid {}, {}); stop it first with `ivnsec macsec down --tap \
                         {tap}`",
                        v["pid"],
                        path.display()
                    )));
                }
                _ => eprintln!(
                    "ivnsec: note: replacing the stale status file {} (its instance is gone)",
                    path.display()
                ),
            }
        }
        let mut tmp = path.clone().into_os_string();
        tmp.push(".tmp");
        Ok(StatusFile {
            path,
            tmp: PathBuf::from(tmp),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn write(&mut self, v: &Value) -> Result<()> {
        let text = serde_json::to_string_pretty(v)?;
        let _ = fs::remove_file(&self.tmp);
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .open(&self.tmp)
            .with_context(|| format!("writing {}", self.tmp.display()))?;
        f.write_all(text.as_bytes())
            .and_then(|_| f.write_all(b"\n"))
            .with_context(|| format!("writing {}", self.tmp.display()))?;
        fs::rename(&self.tmp, &self.path)
            .with_context(|| format!("renaming {}", self.tmp.display()))
    }

    pub fn remove(&self) {
        let _ = fs::remove_file(&self.tmp);
        let _ = fs::remove_file(&self.path);
    }
}

/// The events file: JSON lines appended (created mode 0600). Without a file, events go nowhere.
#[derive(Debug)]
pub struct EventLog {
    file: Option<File>,
    failed: bool,
}

impl EventLog {
    pub fn open(path: Option<&Path>) -> Result<EventLog> {
        let file = match path {
            None => None,
            Some(p) => Some(
                OpenOptions::new()
                    .append(true)
                    .create(true)
                    .mode(0o600)
                    .open(p)
                    .map_err(|e| {
                        usage(format!(
                            "--events {}: cannot append to it: {e}; give a writable file",
                            p.display()
                        ))
                    })?,
            ),
        };
        Ok(EventLog {
            file,
            failed: false,
        })
    }

    /// Appends `{"time": …, "event": event, …fields}` as one line.
    pub fn emit(&mut self, event: &str, fields: Value) {
        let Some(f) = self.file.as_mut() else { return };
        let mut m = serde_json::Map::new();
        m.insert("time".into(), json!(now_unix()));
        m.insert("event".into(), json!(event));
        if let Value::Object(o) = fields {
            m.extend(o);
        }
        let mut line = Value::Object(m).to_string();
        line.push('\n');
        if let Err(e) = f.write_all(line.as_bytes()) {
            if !self.failed {
                eprintln!("ivnsec: warning: --events: {e}; later events are lost");
            }
            self.failed = true;
        }
    }
}

/// Turns growing discard counters into `icv_failure` / `unknown_sci` events (read on the
/// control thread, so the frame paths never write a file).
#[derive(Debug, Default)]
pub struct DropWatch {
    bad_tag: BTreeMap<u64, u64>,
    no_sci: u64,
    last: Option<Instant>,
}

impl DropWatch {
    pub fn emit_new(&mut self, ctl: &SecyControl) {
        if self
            .last
            .is_some_and(|t| t.elapsed() < Duration::from_millis(100))
        {
            return;
        }
        self.last = Some(Instant::now());
        let (per_sc, no_sci): (Vec<(u64, u64)>, u64) = {
            let rx = ctl.shared().rx();
            let mut m: BTreeMap<u64, u64> = BTreeMap::new();
            for sa in rx.sas() {
                *m.entry(sa.sci.to_u64()).or_default() += sa.counters.drops.get(DropReason::BadTag);
            }
            (
                m.into_iter().collect(),
                rx.secy_counters().drops.get(DropReason::NoSci),
            )
        };
        for (sci, n) in per_sc {
            let seen = self.bad_tag.entry(sci).or_default();
            if n > *seen {
                ctl.shared().emit(
                    "icv_failure",
                    json!({"sci": format!("{sci:016x}"), "frames": n - *seen, "total": n}),
                );
            }
            *seen = n;
        }
        if no_sci > self.no_sci {
            ctl.shared().emit(
                "unknown_sci",
                json!({"frames": no_sci - self.no_sci, "total": no_sci}),
            );
            self.no_sci = no_sci;
        }
    }
}

fn tx_json(c: &TxCounters) -> Value {
    json!({
        "OutPktsProtected": c.out_pkts_protected,
        "OutPktsEncrypted": c.out_pkts_encrypted,
        "OutOctetsProtected": c.out_octets_protected,
        "OutOctetsEncrypted": c.out_octets_encrypted,
        "OutPktsTooLong": c.out_pkts_too_long,
    })
}

fn rx_json(c: &RxCounters) -> Value {
    let mut m = serde_json::Map::new();
    for (k, v) in c.named() {
        m.insert(k.to_string(), json!(v));
    }
    Value::Object(m)
}

fn drops_json(c: &RxCounters) -> Value {
    let mut m = serde_json::Map::new();
    for (r, n) in c.drops.iter() {
        m.insert(r.name().to_string(), json!(n));
    }
    Value::Object(m)
}

/// The status of a running instance: `header` (where, what) with the SAs, PNs and counters now.
pub fn snapshot(header: &Value, ctl: &SecyControl, source: &dyn KeySource) -> Value {
    let sh = ctl.shared();
    let tx = {
        let t = sh.tx();
        let d = t.secy.discards();
        let sas: Vec<Value> = t
            .secy
            .sas()
            .map(|s| {
                json!({
                    "an": s.an, "key_number": s.key_number, "next_pn": s.next_pn,
                    "in_use": s.in_use, "reserved_pn": t.reserve[usize::from(s.an)].as_ref().map(|h| h.covered()),
                    "reserve_block": t.reserve[usize::from(s.an)].as_ref().map(|h| h.status_field("block")),
                    "counters": tx_json(&s.counters),
                })
            })
            .collect();
        json!({
            "encoding_an": t.secy.encoding_an(),
            "next_pn": t.secy.next_pn(),
            "exhausted": t.secy.exhausted(),
            "sas": sas,
            "counters": tx_json(&t.secy.counters()),
            "discards": {"no_sa": d.no_sa, "pn_exhausted": d.pn_exhausted, "bad_frame": d.bad_frame},
        })
    };
    let rx = {
        let r = sh.rx();
        let marks = sh.rx_marks();
        let sas: Vec<Value> = r
            .sas()
            .map(|s| {
                let mark = marks
                    .iter()
                    .find(|m| m.sci == s.sci && m.an == s.an)
                    .map(|m| {
                        let mut v = m.mark.status_json();
                        v["refused_below_mark"] = json!(s.counters.below_restored);
                        v
                    });
                json!({
                    "sci": sci_hex(s.sci), "an": s.an, "key_number": s.key_number,
                    "next_pn": s.next_pn, "lowest_pn": s.lowest_pn,
                    "counters": rx_json(&s.counters), "drops": drops_json(&s.counters),
                    "replay_mark": mark,
                })
            })
            .collect();
        let totals = r.totals();
        json!({
            "peers": r.scs().map(sci_hex).collect::<Vec<_>>(),
            "sas": sas,
            "counters": rx_json(&totals),
            "drops": drops_json(&totals),
        })
    };
    let mut v = header.clone();
    if let Value::Object(m) = &mut v {
        m.insert("updated".into(), json!(now_unix()));
        m.insert("key_source_state".into(), source.describe(ctl));
        m.insert("tx".into(), tx);
        m.insert("rx".into(), rx);
        m.insert("frames".into(), sh.frames.json());
    }
    v
}

/// Human-readable lines of one status.
pub fn render(f: &Found) -> String {
    let s = &f.status;
    let mut out = String::new();
    let state = if f.alive {
        format!("running (pid {})", s["pid"])
    } else {
        format!(
            "NOT RUNNING: pid {} is gone; stale status (remove it with `ivnsec macsec down --tap {}`)",
            s["pid"],
            s["tap"].as_str().unwrap_or("?")
        )
    };
    let str_of = |v: &Value| {
        v.as_str()
            .map(str::to_string)
            .unwrap_or_else(|| v.to_string())
    };
    if s["family"] == "ivnae" {
        // An IVN-AE gateway (crate::gateway): one transmit SA, receive SAs by key id.
        out.push_str(&format!(
            "gateway {} ⇄ {}  {}  key id {} (peers' key ids {})  MTU {}/{}\n  {state}\n  \
             tx: next sequence number {} (reserved up to {})\n  frames: {}\n  rx drops: {}\n",
            str_of(&s["plain"]),
            str_of(&s["protected"]),
            str_of(&s["profile"]),
            s["key_id"],
            s["rx_key_ids"],
            s["mtu"]["plain"],
            s["mtu"]["protected"],
            s["tx"]["next_seq"],
            s["tx"]["reserved"],
            s["frames"],
            s["rx"]["drops"]
        ));
        return out;
    }
    out.push_str(&format!(
        "{} ⇄ {}  {}  SCI {}  MTU {}/{}  keys: {}\n  {state}\n",
        str_of(&s["tap"]),
        str_of(&s["iface"]),
        str_of(&s["profile"]),
        str_of(&s["sci"]),
        s["mtu"]["tap"],
        s["mtu"]["iface"],
        str_of(&s["key_source"]),
    ));
    if s["key_source"] == "mka" {
        render_mka(&mut out, &s["key_source_state"]);
    }
    out.push_str(&format!(
        "  tx: encoding AN {}, next PN {}{}\n",
        s["tx"]["encoding_an"],
        s["tx"]["next_pn"],
        if s["tx"]["exhausted"] == true {
            " (EXHAUSTED: a new SAK is needed)"
        } else {
            ""
        }
    ));
    for sa in s["tx"]["sas"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "    tx SA AN {} key {}: next PN {}, reserved up to {}, {} frames{}\n",
            sa["an"],
            sa["key_number"],
            sa["next_pn"],
            sa["reserved_pn"],
            sa["counters"]["OutPktsEncrypted"].as_u64().unwrap_or(0)
                + sa["counters"]["OutPktsProtected"].as_u64().unwrap_or(0),
            if sa["in_use"] == true {
                " (in use)"
            } else {
                ""
            }
        ));
    }
    for sa in s["rx"]["sas"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "    rx SA {} AN {} key {}: next PN {}, lowest PN {}, {} ok, drops {}\n",
            str_of(&sa["sci"]),
            sa["an"],
            sa["key_number"],
            sa["next_pn"],
            sa["lowest_pn"],
            sa["counters"]["InPktsOK"],
            sa["drops"]
        ));
    }
    out.push_str(&format!(
        "  frames: {}\n  rx drops: {}\n",
        s["frames"], s["rx"]["drops"]
    ));
    out
}

/// The MKA lines of a status: the participant, its peers, its keys, its MKPDU counters.
fn render_mka(out: &mut String, k: &Value) {
    let str_of = |v: &Value| {
        v.as_str()
            .map(str::to_string)
            .unwrap_or_else(|| v.to_string())
    };
    let ks = match (k["key_server"].as_str(), k["is_key_server"] == true) {
        (None, _) => "none (no live peer)".to_string(),
        (Some(s), true) => format!("{s} (this member)"),
        (Some(s), false) => s.to_string(),
    };
    out.push_str(&format!(
        "  mka: CKN {}, MI {}, priority {}, key server {ks}\n",
        str_of(&k["ckn"]),
        str_of(&k["mi"]),
        k["priority"]
    ));
    for p in k["peers"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "    peer {} {}: MI {}, MN {}, priority {}\n",
            str_of(&p["sci"]),
            if p["live"] == true {
                "live"
            } else {
                "potential"
            },
            str_of(&p["mi"]),
            p["mn"],
            p["priority"]
        ));
    }
    for which in ["latest", "old"] {
        let key = &k[which];
        if key.is_null() {
            continue;
        }
        out.push_str(&format!(
            "    {which} SAK: key number {} of key server MI {}, AN {}, rx {}, tx {}, tx PN {}\n",
            key["key_number"],
            str_of(&key["key_server_mi"]),
            key["an"],
            key["rx"],
            key["tx"],
            key["tx_pn"]
        ));
    }
    let c = &k["counters"];
    out.push_str(&format!(
        "    MKPDUs: {} sent, {} accepted, drops {}; SAKs distributed {}, installed {}, retired {}\n",
        c["pdus_sent"],
        c["pdus_accepted"],
        c["drops"],
        c["saks_distributed"],
        c["saks_installed"],
        c["saks_retired"]
    ));
    if let Some(n) = c["tx_refused"]["no_state"].as_u64().filter(|n| *n > 0) {
        out.push_str(&format!(
            "    transmit refused: {n} SAK(s) met again without their nonce state (used-SAK \
             record {}): receive only until a new SAK\n",
            str_of(&k["sak_record"])
        ));
    }
}

/// What `ivnsec macsec down` did.
#[derive(Debug, Default)]
pub struct Down {
    pub stopped: Vec<u64>,
    pub stale_removed: Vec<PathBuf>,
    pub taps_removed: Vec<String>,
}

/// Stops the instances of this namespace (of `tap` only, when given): SIGTERM to a live one and
/// a wait of up to `wait` for it to end (SIGKILL after that); then removes the status files and
/// any TAP of theirs that is still there. Idempotent.
pub fn down(run_dir: &Path, tap: Option<&str>, wait: Duration) -> Result<Down> {
    let mut done = Down::default();
    for f in find(run_dir, tap)? {
        let pid = f.status["pid"].as_u64().unwrap_or(0);
        if f.alive {
            let p = u32::try_from(pid).context("pid out of range")?;
            ivnsec_net::sys::signal_process(p, false)?;
            let t0 = Instant::now();
            while instance_alive(pid) && t0.elapsed() < wait {
                std::thread::sleep(Duration::from_millis(20));
            }
            if instance_alive(pid) {
                ivnsec_net::sys::signal_process(p, true)?;
                std::thread::sleep(Duration::from_millis(100));
            }
            done.stopped.push(pid);
        }
        if f.path.exists() {
            let _ = fs::remove_file(&f.path);
            if !f.alive {
                done.stale_removed.push(f.path.clone());
            }
        }
        // A TAP outlives its instance only if another process holds its descriptor; a TAP of
        // that name (sysfs shows `tun_flags` for TUN/TAP interfaces only) is removed.
        // A gateway's "tap" is its plain port: never removed.
        if let Some(name) = f.status["tap"].as_str()
            && f.status["role"] != "gateway"
            && ivnsec_net::topology::check_ifname(name).is_ok()
            && Path::new("/sys/class/net")
                .join(name)
                .join("tun_flags")
                .exists()
        {
            let o = ivnsec_net::sys::die_with_parent(&mut std::process::Command::new("ip"))
                .args(["link", "del", "dev", name])
                .output()
                .context("running `ip link del`")?;
            if o.status.success() {
                done.taps_removed.push(name.to_string());
            }
        }
    }
    Ok(done)
}
