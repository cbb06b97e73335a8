//! Runs `ivnsec attack --mka` ([`super::mka`]): on the attack testbed (or a running one with
//! three ECUs), the first two ECUs run `ivnsec macsec up --psk` with one CAK, agree a SAK and
//! ping each other through their TAPs; for each class the third ECU injects MKPDUs while the
//! ping runs; the verdict comes from the members' status files (MKA drop counters) and events
//! files (peers made live, SAKs installed, key server elections), and from the ping.
//!
//! The switches run as hubs (no address learning: a replayed MKPDU carries a member's source
//! address, which must not pull that member's traffic to the attacker's port) and forward the
//! PAE group address 01-80-C2-00-00-03 (`group_fwd_mask` 8; a Linux bridge keeps link-local
//! group addresses to itself by default); both are set back afterwards.

use std::collections::{BTreeMap, HashSet};
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use ivnsec_core::channel::DirectionKeys;
use ivnsec_core::profile::{NamedProfile, Profile};
use ivnsec_crypto::ProviderChoice;
use ivnsec_net::sys::die_with_parent;
use ivnsec_net::testbed::{self, netns_command};
use ivnsec_net::topology::{self, Topology};
use serde_json::Value;

use super::AttackResult;
use super::mka::{MkaAccount, MkaAttack, MkaAttackSpec};
use super::roles::Roles;
use super::run::{
    Outcome, Switches, TempDir, chosen, ip, open_production, open_testbed, set_bridge,
};
use crate::process::{child_stderr, read_report, spawn_role};
use crate::site::{net_err, node_addr};
use crate::stats::quantile_sorted;
use ivnsec_node::error::{env_error, usage};
use ivnsec_node::keys::psk::{self, Psk};

/// The profile of a run that names none.
pub const DEFAULT_PROFILE: &str = "macsec-gcm-aes-128";
/// Default MKPDUs per class.
pub const DEFAULT_COUNT: u64 = 1000;
/// The TAP each member creates (in its own namespace).
const TAP: &str = "mka0";
/// How long the members get to agree a SAK.
const SECURE_WITHIN: Duration = Duration::from_secs(30);
/// Ping interval of the legitimate traffic.
const PING_INTERVAL: &str = "0.01";
/// Legitimate traffic before the attacker starts and after it ends.
pub(super) const SETTLE: Duration = Duration::from_millis(500);
/// The last echo requests before ping is stopped, not judged (100 ms at [`PING_INTERVAL`]).
const PING_TAIL: u64 = 10;
/// Largest status or events file read.
const MAX_FILE: u64 = 64 << 20;

/// The settings of one `ivnsec attack --mka` run.
#[derive(Clone, Debug)]
pub struct MkaAttackConfig {
    /// MACsec profiles, with the names the user gave them.
    pub profiles: Vec<NamedProfile>,
    /// The classes (empty: all four), run in the order of [`MkaAttack::ALL`].
    pub attacks: Vec<MkaAttack>,
    /// MKPDUs injected per class and profile.
    pub count: u64,
    pub provider: ProviderChoice,
    /// Use this running testbed (three ECUs at least) instead of building one.
    pub testbed: Option<String>,
    /// Build this topology instead of `sensors:2`: only `production` (sensor1 and the
    /// consumer are the members, sensor2 attacks; [`super::run::production_roles`]).
    pub topology: Option<Topology>,
}

impl MkaAttackConfig {
    /// The profiles (default [`DEFAULT_PROFILE`]): MACsec ones only, a usage error otherwise.
    pub fn checked_profiles(&self) -> Result<Vec<NamedProfile>> {
        if !(1..=1_000_000).contains(&self.count) {
            return Err(usage("--count must be 1 to 1000000 with --mka"));
        }
        let list = if self.profiles.is_empty() {
            vec![
                DEFAULT_PROFILE
                    .parse()
                    .expect("the default profile is a profile"),
            ]
        } else {
            self.profiles.clone()
        };
        for p in &list {
            if !matches!(p.profile(), Profile::Macsec(_)) {
                return Err(usage(format!(
                    "--profile {p}: the MKA classes attack MACsec key agreement; give \
                     macsec-gcm-aes-128, macsec-gcm-aes-256, macsec-gcm-aes-xpn-128 or \
                     macsec-gcm-aes-xpn-256"
                )));
            }
        }
        Ok(list)
    }

    fn classes(&self) -> Vec<MkaAttack> {
        chosen(&self.attacks, &MkaAttack::ALL)
    }
}

/// Run `index` (from 1) of `total`: `class` against `profile`.
pub type MkaProgress<'a> = (usize, usize, &'a str, MkaAttack);

/// Runs every MKA class of `cfg` against every profile; `progress` hears each run before it
/// starts and `None` at the end. Needs root.
pub fn run_mka_attacks(
    cfg: &MkaAttackConfig,
    progress: &mut dyn FnMut(Option<MkaProgress<'_>>),
) -> Result<Outcome> {
    let profiles = cfg.checked_profiles()?;
    let classes = cfg.classes();
    match (cfg.topology, cfg.testbed.as_deref()) {
        (None | Some(Topology::Production), None) | (None, Some(_)) => {}
        (Some(t), _) => {
            return Err(usage(format!(
                "--mka --topology {t}: the MKA classes run on sensors:2 (the default), on \
                 production, or on a running testbed given with --testbed (not both); the \
                 gateways of bump and bump2 are attacked with the frame classes"
            )));
        }
    }
    testbed::check_environment().map_err(|e| {
        env_error(format!(
            "{e}; `ivnsec attack --mka` runs MACsec members and injects MKPDUs on a testbed and \
             needs root (run it with sudo)"
        ))
    })?;
    let (owned, roles) = match cfg.topology {
        None => open_testbed(cfg.testbed.as_deref())?,
        Some(_) => open_production()?,
    };
    let switches = Switches::hub(&roles.state)?;
    let _eapol = GroupForwarding::on(&switches.switches)?;
    let tmp = TempDir::new()?;
    let psk_file = tmp.0.join("ca.psk");
    let key = Psk::generate(128, None)?;
    psk::write_new(&psk_file, &key)?;
    let total = profiles.len() * classes.len();
    let mut results = Vec::new();
    // Interrupted (crate::interrupt): the classes that finished are returned, the one in
    // progress is left out; the members are killed (on drop).
    let stopped = crate::interrupt::requested;
    'profiles: for profile in &profiles {
        if stopped() {
            break;
        }
        let mut members =
            match Members::start(&roles, &tmp.0, &psk_file, profile.name(), cfg.provider) {
                Err(_) if stopped() => break,
                m => m?,
            };
        for &attack in &classes {
            if stopped() {
                break 'profiles;
            }
            progress(Some((results.len() + 1, total, profile.name(), attack)));
            let r = match run_class(&roles, &mut members, &key, profile, attack, cfg) {
                Err(_) if stopped() => break 'profiles,
                r => r.with_context(|| format!("{profile}, {}", attack.name()))?,
            };
            results.push(r);
        }
        members.stop()?;
    }
    progress(None);
    drop(tmp);
    drop(_eapol);
    drop(switches);
    if let Some(tb) = owned {
        tb.down().map_err(net_err)?;
    }
    Ok(Outcome {
        results,
        testbed: format!("{} ({})", roles.state.prefix, roles.state.topology),
    })
}

/// The switches forward the PAE group address while it lives (`group_fwd_mask` bit 3), set
/// back to what they had when dropped.
pub(super) struct GroupForwarding(Vec<(String, String)>);

impl GroupForwarding {
    pub(super) fn on(switches: &[String]) -> Result<GroupForwarding> {
        let mut g = GroupForwarding(Vec::new());
        for ns in switches {
            let o = die_with_parent(&mut netns_command(ns, "cat"))
                .arg(format!(
                    "/sys/class/net/{}/bridge/group_fwd_mask",
                    topology::BRIDGE_IF
                ))
                .stdin(Stdio::null())
                .output()
                .context("reading the bridge's group_fwd_mask")?;
            let old = String::from_utf8_lossy(&o.stdout).trim().to_string();
            let old = u16::from_str_radix(old.trim_start_matches("0x"), 16).unwrap_or(0);
            g.0.push((ns.clone(), old.to_string()));
            let mask = (old | 8).to_string();
            set_bridge(ns, "group_fwd_mask", &mask)?;
        }
        Ok(g)
    }
}

impl Drop for GroupForwarding {
    fn drop(&mut self) {
        for (ns, old) in &self.0 {
            let _ = set_bridge(ns, "group_fwd_mask", old);
        }
    }
}

/// One member: `ivnsec macsec up` (with `--psk`, or the 802.1X options of `--eap`) in an ECU
/// namespace.
pub(super) struct Member {
    pub(super) ns: String,
    pub(super) mac: [u8; 6],
    run_dir: PathBuf,
    events: PathBuf,
    child: Child,
    /// Its stderr, read by a thread (the last lines, for errors).
    stderr: mpsc::Receiver<String>,
    seen_stderr: String,
}

impl Member {
    /// Starts `ivnsec macsec up` with `key_args` (the key source and its options) and returns
    /// once it runs.
    pub(super) fn start(
        ns: &str,
        mac: [u8; 6],
        dir: &Path,
        key_args: &[OsString],
        profile: &str,
        provider: ProviderChoice,
    ) -> Result<Member> {
        let exe = std::env::current_exe().context("locating the ivnsec binary")?;
        let (run_dir, events, state) =
            (dir.join("run"), dir.join("events.jsonl"), dir.join("state"));
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let mut cmd = netns_command(ns, &exe);
        cmd.args([
            "macsec",
            "up",
            "--iface",
            topology::ECU_IF,
            "--tap",
            TAP,
            "--profile",
            profile,
        ])
        .args(key_args)
        .arg("--state-dir")
        .arg(&state)
        .arg("--run-dir")
        .arg(&run_dir)
        .arg("--events")
        .arg(&events)
        .args(["--provider", provider.name()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
        let mut child = crate::interrupt::spawn(die_with_parent(&mut cmd))
            .context("starting `ivnsec macsec up`")?;
        let err = child.stderr.take().expect("piped");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut m = Member {
            ns: ns.to_string(),
            mac,
            run_dir,
            events,
            child,
            stderr: rx,
            seen_stderr: String::new(),
        };
        let t0 = Instant::now();
        loop {
            match m.stderr.recv_timeout(Duration::from_millis(200)) {
                Ok(line) => {
                    m.note(&line);
                    if line.contains("running until") {
                        return Ok(m);
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) if t0.elapsed() < Duration::from_secs(10) => {}
                Err(_) => {
                    let _ = m.child.kill();
                    let _ = m.child.wait();
                    bail!(
                        "`ivnsec macsec up` in {ns} did not start: {}",
                        m.seen_stderr.trim()
                    );
                }
            }
        }
    }

    fn note(&mut self, line: &str) {
        if self.seen_stderr.len() < 16 * 1024 {
            self.seen_stderr.push_str(line);
            self.seen_stderr.push('\n');
        }
    }

    /// Its status file now (the one file in its run directory).
    pub(super) fn read_status(&self) -> Result<Value> {
        let dir = self.run_dir.join("macsec");
        let files = std::fs::read_dir(&dir)
            .with_context(|| format!("listing {}", dir.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect::<Vec<_>>();
        let [file] = files.as_slice() else {
            bail!(
                "expected one status file in {}, found {}",
                dir.display(),
                files.len()
            );
        };
        serde_json::from_str(&read_bounded(file)?)
            .with_context(|| format!("{}: not a status file", file.display()))
    }

    /// Its status as written after `t` (Unix seconds): the file is rewritten every half second,
    /// so counters read right after the attacker stopped could miss its last MKPDUs.
    pub(super) fn status_after(&self, t: f64) -> Result<Value> {
        let t0 = Instant::now();
        loop {
            let st = self.read_status()?;
            if st["updated"].as_f64().is_some_and(|u| u > t) {
                return Ok(st);
            }
            if t0.elapsed() > Duration::from_secs(5) {
                bail!(
                    "the status of the member in {} is not updated any more",
                    self.ns
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Its events so far, one JSON value per line.
    pub(super) fn events(&self) -> Result<Vec<Value>> {
        Ok(read_bounded(&self.events)?
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect())
    }
}

fn read_bounded(p: &Path) -> Result<String> {
    let f = std::fs::File::open(p).with_context(|| format!("reading {}", p.display()))?;
    let mut s = String::new();
    f.take(MAX_FILE)
        .read_to_string(&mut s)
        .with_context(|| format!("reading {}", p.display()))?;
    Ok(s)
}

/// Whether a status says the member transmits under an agreed SAK with a live peer.
pub(super) fn secured(st: &Value) -> bool {
    !st["tx"]["encoding_an"].is_null()
        && st["key_source_state"]["peers"]
            .as_array()
            .is_some_and(|p| p.iter().any(|p| p["live"] == true))
}

/// The two members of one profile's run, and their addresses on the TAPs.
pub(super) struct Members {
    pub(super) m: Vec<Member>,
    pub(super) addrs: [Ipv4Addr; 2],
}

impl Members {
    fn start(
        roles: &Roles,
        tmp: &Path,
        psk_file: &Path,
        profile: &str,
        provider: ProviderChoice,
    ) -> Result<Members> {
        let dir = tmp.join(profile.replace('/', "_"));
        let mut m = Vec::new();
        for (i, name) in [&roles.sender, &roles.receiver].into_iter().enumerate() {
            let ns = roles.state.namespace_of(name).map_err(net_err)?.to_string();
            let (mac, _) = node_addr(&roles.state, name)?;
            m.push(Member::start(
                &ns,
                mac,
                &dir.join(format!("member{i}")),
                &[OsString::from("--psk"), psk_file.into()],
                profile,
                provider,
            )?);
        }
        Members::secure(m)
    }

    /// Waits until both members of `m` transmit under an agreed SAK, then gives their TAPs
    /// their addresses.
    pub(super) fn secure(m: Vec<Member>) -> Result<Members> {
        let mut ms = Members {
            m,
            addrs: [Ipv4Addr::new(10, 98, 0, 1), Ipv4Addr::new(10, 98, 0, 2)],
        };
        let t0 = Instant::now();
        loop {
            let mut all = true;
            for m in &ms.m {
                all &= m.read_status().is_ok_and(|s| secured(&s));
            }
            if all {
                break;
            }
            if crate::interrupt::requested() {
                bail!("interrupted");
            }
            if t0.elapsed() > SECURE_WITHIN {
                let st: Vec<String> =
                    ms.m.iter()
                        .map(|m| {
                            m.read_status().map_or_else(
                                |e| format!("{e:#}"),
                                |s| s["key_source_state"].to_string(),
                            )
                        })
                        .collect();
                ms.stop_quietly();
                bail!(
                    "the members agreed no SAK within {SECURE_WITHIN:?} (the switch must forward \
                     01-80-C2-00-00-03): {}",
                    st.join("; ")
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        for (m, a) in ms.m.iter().zip(ms.addrs) {
            ip(&m.ns, &["addr", "add", &format!("{a}/24"), "dev", TAP])?;
        }
        Ok(ms)
    }

    pub(super) fn stop_quietly(&mut self) {
        for m in &mut self.m {
            let _ = ivnsec_net::sys::signal_process(m.child.id(), false);
            let _ = m.child.wait();
        }
    }

    /// SIGTERM to each; each must end with exit 0.
    pub(super) fn stop(mut self) -> Result<()> {
        let mut bad = Vec::new();
        for m in &mut self.m {
            ivnsec_net::sys::signal_process(m.child.id(), false)?;
            let st = m.child.wait()?;
            while let Ok(l) = m.stderr.try_recv() {
                m.note(&l);
            }
            if !st.success() {
                bad.push(format!("{} ({st}): {}", m.ns, m.seen_stderr.trim()));
            }
        }
        self.m.clear();
        if bad.is_empty() {
            Ok(())
        } else {
            bail!("a member failed: {}", bad.join("; "))
        }
    }
}

impl Drop for Members {
    fn drop(&mut self) {
        for m in &mut self.m {
            let _ = m.child.kill();
            let _ = m.child.wait();
        }
    }
}

/// The legitimate ping from the first member to the second across the TAPs, until stopped.
pub(super) struct Ping(Child);

impl Ping {
    pub(super) fn start(ns: &str, to: Ipv4Addr) -> Result<Ping> {
        let mut cmd = netns_command(ns, "ping");
        cmd.args(["-i", PING_INTERVAL, "-W", "1", "-n"])
            .arg(to.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let child = die_with_parent(&mut cmd)
            .spawn()
            .map_err(|e| env_error(format!("starting ping: {e}; install iputils-ping")))?;
        Ok(Ping(child))
    }

    /// SIGINT (ping prints its summary), then (sent, received, RTTs in µs) of the echo
    /// requests sent up to [`PING_TAIL`] requests before the stop: a reply to one of the last
    /// may still be on its way when ping ends (the stop comes [`SETTLE`] after the attacker
    /// ended, so those are outside the attack anyway).
    pub(super) fn stop(mut self) -> Result<(u64, u64, Vec<f64>)> {
        let pid = self.0.id().to_string();
        die_with_parent(Command::new("kill").args(["-INT", &pid]))
            .status()
            .context("stopping ping")?;
        let mut out = String::new();
        self.0
            .stdout
            .take()
            .expect("piped")
            .read_to_string(&mut out)?;
        let err = child_stderr(&mut self.0);
        let _ = self.0.wait();
        let mut rtts: Vec<f64> = out
            .lines()
            .filter_map(|l| l.split("time=").nth(1))
            .filter_map(|t| t.split_whitespace().next()?.parse::<f64>().ok())
            .map(|ms| ms * 1000.0)
            .collect();
        rtts.sort_by(f64::total_cmp);
        let summary = out
            .lines()
            .find(|l| l.contains("packets transmitted"))
            .ok_or_else(|| anyhow!("ping printed no summary: {out}{err}"))?;
        let num = |word: &str| -> Result<u64> {
            summary
                .split(',')
                .find(|p| p.contains(word))
                .and_then(|p| p.split_whitespace().next())
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| anyhow!("ping summary `{summary}` has no `{word}`"))
        };
        let judged = num("transmitted")?.saturating_sub(PING_TAIL);
        let replied: std::collections::BTreeSet<u64> = out
            .lines()
            .filter_map(|l| l.split("icmp_seq=").nth(1))
            .filter_map(|t| t.split_whitespace().next()?.parse::<u64>().ok())
            .filter(|&seq| (1..=judged).contains(&seq))
            .collect();
        Ok((judged, replied.len() as u64, rtts))
    }
}

/// The MKA counters of a status (drop reasons by name).
fn drops(st: &Value) -> BTreeMap<String, u64> {
    st["key_source_state"]["counters"]["drops"]
        .as_object()
        .map(|o| {
            o.iter()
                .map(|(k, v)| (k.clone(), v.as_u64().unwrap_or(0)))
                .collect()
        })
        .unwrap_or_default()
}

fn key_server(st: &Value) -> Option<String> {
    st["key_source_state"]["key_server"]
        .as_str()
        .map(str::to_string)
}

/// The drop counters (by reason) that moved between `before` and `after` (one status per
/// member, `drops` reading a status's counters), summed over the members.
pub(super) fn moved_drops(
    before: &[Value],
    after: &[Value],
    drops: fn(&Value) -> BTreeMap<String, u64>,
) -> BTreeMap<String, u64> {
    let mut dropped: BTreeMap<String, u64> = BTreeMap::new();
    for (b, a) in before.iter().zip(after) {
        let (b, a) = (drops(b), drops(a));
        for (k, v) in a {
            let d = v.saturating_sub(b.get(&k).copied().unwrap_or(0));
            if d > 0 {
                *dropped.entry(k).or_default() += d;
            }
        }
    }
    dropped
}

/// The moved drops of the reasons that judge a class.
pub(super) fn judged_drops(dropped: &BTreeMap<String, u64>, reasons: &[&str]) -> u64 {
    reasons
        .iter()
        .map(|r| dropped.get(*r).copied().unwrap_or(0))
        .sum()
}

/// One class against the running members.
fn run_class(
    roles: &Roles,
    members: &mut Members,
    key: &Psk,
    profile: &NamedProfile,
    attack: MkaAttack,
    cfg: &MkaAttackConfig,
) -> Result<AttackResult> {
    let now = ivnsec_node::macsec::status::now_unix();
    let before: Vec<Value> = members
        .m
        .iter()
        .map(|m| m.status_after(now))
        .collect::<Result<_>>()?;
    let offsets: Vec<usize> = members
        .m
        .iter()
        .map(|m| m.events().map(|e| e.len()))
        .collect::<Result<_>>()?;
    let ping = Ping::start(&members.m[0].ns, members.addrs[1])?;
    std::thread::sleep(SETTLE);
    let x_ns = roles
        .state
        .namespace_of(&roles.attacker)
        .map_err(net_err)?
        .to_string();
    let (x_mac, _) = node_addr(&roles.state, &roles.attacker)?;
    let spec = MkaAttackSpec {
        attack,
        profile: profile.profile(),
        provider: cfg.provider,
        count: cfg.count,
        ifname: topology::ECU_IF.to_string(),
        attacker_mac: x_mac,
        members: members.m.iter().map(|m| m.mac).collect(),
        ckn: key.ckn().to_vec(),
        cak: if attack.insider() {
            DirectionKeys::new(key.cak(), &[], [0; 12])
        } else {
            DirectionKeys::default()
        },
    };
    let attacker = run_attacker(&x_ns, &spec);
    std::thread::sleep(SETTLE);
    let (sent, received, rtts) = ping.stop()?;
    let (injected, mi, seconds) = attacker?;
    let now = ivnsec_node::macsec::status::now_unix();
    let after: Vec<Value> = members
        .m
        .iter()
        .map(|m| m.status_after(now))
        .collect::<Result<_>>()?;

    // The drops of this class at every member.
    let dropped = moved_drops(&before, &after, drops);
    let judged = judged_drops(&dropped, attack.judged_by());

    // What the events say: peers made live with the attacker's MI, SAKs no legitimate key
    // server distributed, elections while the attacker was at work.
    let mut legit_saks: HashSet<(String, u64)> = HashSet::new();
    let mut all_events = Vec::new();
    for m in &members.m {
        let ev = m.events()?;
        for e in &ev {
            if e["event"] == "sak_distributed" {
                legit_saks.insert((
                    e["key_server_mi"].as_str().unwrap_or_default().to_string(),
                    e["key_number"].as_u64().unwrap_or(0),
                ));
            }
        }
        all_events.push(ev);
    }
    let mut account = MkaAccount::default();
    for (ev, &off) in all_events.iter().zip(&offsets) {
        for e in ev.iter().skip(off) {
            match e["event"].as_str() {
                Some("peer_live") if !attack.insider() && e["mi"] == mi.as_str() => {
                    account.peers_made_live += 1
                }
                Some("sak_installed") => {
                    let id = (
                        e["key_server_mi"].as_str().unwrap_or_default().to_string(),
                        e["key_number"].as_u64().unwrap_or(0),
                    );
                    if !legit_saks.contains(&id) {
                        account.forged_saks_installed += 1;
                    }
                }
                Some("key_server_elected") => account.key_server_changes += 1,
                _ => {}
            }
        }
    }
    account.key_server_before = before.iter().map(key_server).collect();
    account.key_server_after = after.iter().map(key_server).collect();
    account.ping_rtt_p50_us = (!rtts.is_empty()).then(|| quantile_sorted(&rtts, 0.5));
    account.ping_rtt_max_us = rtts.last().copied();
    let accepted =
        account.peers_made_live + account.forged_saks_installed + account.key_server_changes;
    let n = members.m.len() as u64;
    Ok(AttackResult {
        profile: profile.clone(),
        attack: attack.name(),
        injected,
        accepted,
        dropped,
        // An MKPDU goes to every member; it is seen when each judged it.
        not_seen: injected.saturating_sub(judged / n.max(1)),
        // These classes never alter the source address.
        switch_refused: 0,
        rate_fps: if seconds > 0.0 {
            injected as f64 / seconds
        } else {
            0.0
        },
        legit_sent: sent,
        legit_delivered: received,
        legit_exchanges_lost: sent.saturating_sub(received),
        legit_p50_us: None,
        legit_p999_us: None,
        legit_rtt_p50_us: None,
        legit_rtt_p999_us: None,
        switch: "hub",
        receiver_socket_drops: 0,
        initiator_socket_drops: 0,
        mka: Some(account),
        eap: None,
        gateway: None,
        not_run: None,
    })
}

/// Runs the MKA attacker to its end; returns (MKPDUs injected, its MI in hex, seconds).
fn run_attacker(ns: &str, spec: &MkaAttackSpec) -> Result<(u64, String, f64)> {
    let mut child = spawn_role(Some(ns), "mka-attack", spec, "MKA attacker")?;
    drop(child.stdin.take());
    let out = BufReader::new(child.stdout.take().expect("piped"));
    let (mut injected, mut mi, mut seconds) = (None, String::new(), 0.0);
    let read = read_report(out, "MKA attacker", |f| {
        match f {
            ["INJECTED", n] => injected = n.parse().ok(),
            ["MI", m] => mi = m.to_string(),
            ["SECONDS", s] => seconds = s.parse().unwrap_or(0.0),
            _ => return Ok(false),
        }
        Ok(true)
    });
    let err = child_stderr(&mut child);
    let status = child.wait()?;
    if !status.success() {
        bail!("the MKA attacker failed ({status}): {err}");
    }
    read.with_context(|| format!("MKA attacker: {err}"))?;
    match injected {
        Some(n) => Ok((n, mi, seconds)),
        None => bail!("the MKA attacker ended without its count: {err}"),
    }
}
