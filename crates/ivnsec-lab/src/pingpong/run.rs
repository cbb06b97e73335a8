//! Runs one ping-pong scenario: starts the responder and the initiator as separate processes
//! (inside their ECU namespaces on a testbed, or side by side over UDP on loopback), collects
//! both logs and joins them into [`Exchange`]s; judges them against the requirements.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::net::Ipv4Addr;
use std::process::{Child, ChildStdin, ChildStdout};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result, bail};
use ivnsec_core::channel::Ends;
use ivnsec_core::profile::{NamedProfile, Profile};
use ivnsec_crypto::ProviderChoice;
use ivnsec_net::topology;
use serde_json::{Map, Value, json};

use super::node::{MIN_PAYLOAD, Role, RoleSpec};
use super::{Exchange, Requirements, Section, SectionStats, Verdicts};
use crate::hosts::Remote;
use crate::process::{Place, child_stderr, field_u64, read_report, spawn_role_at, wait_ready};
use crate::site::{Site, link_spec, link_spec_on, net_err, node_addr};
use ivnsec_node::channel::{frame_bytes, random_keys};
use ivnsec_node::error::usage;

/// Receive strategy of both nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Sleep in the kernel until a frame arrives (a wake-up per hop).
    Blocking,
    /// Spin on non-blocking reads (one CPU busy per node, no wake-up latency).
    BusyPoll,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Blocking => "blocking",
            Mode::BusyPoll => "busy-poll",
        }
    }
}

/// One scenario's settings.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// The profile, with the name the plan or command line gave it (report labels keep it).
    pub profile: NamedProfile,
    pub payload: usize,
    pub count: u32,
    pub replications: u32,
    pub pause_ns: u64,
    pub timeout_ns: u64,
    pub mode: Mode,
    pub pin: bool,
    pub provider: ProviderChoice,
}

impl Scenario {
    /// The scenario's name in reports: `profile@payload`.
    pub fn name(&self) -> String {
        format!("{}@{}", self.profile, self.payload)
    }

    /// Checks the profile and that the frame fits the 1500-byte MTU; returns the frame length.
    pub fn check(&self) -> Result<usize> {
        if self.payload < MIN_PAYLOAD {
            return Err(usage(format!(
                "scenario {}: the payload must be at least {MIN_PAYLOAD} bytes (the exchange id)",
                self.name()
            )));
        }
        if self.count == 0 || self.replications == 0 {
            return Err(usage(format!(
                "scenario {}: count and replications must be ≥ 1",
                self.name()
            )));
        }
        let frame = frame_bytes(self.profile.profile(), self.provider, self.payload)?;
        let l2_payload = frame - 14;
        if l2_payload > topology::MTU as usize {
            return Err(usage(format!(
                "scenario {}: the {} frame carries {l2_payload} bytes after the Ethernet header, \
                 more than the {}-byte MTU; use a payload of at most {} bytes",
                self.name(),
                self.profile,
                topology::MTU,
                self.payload - (l2_payload - topology::MTU as usize)
            )));
        }
        Ok(frame)
    }
}

/// A duration in ms from the command line or a plan, as ns; `what` names it in the error.
pub fn ms_to_ns(what: &str, ms: f64, allow_zero: bool) -> Result<u64> {
    if !ms.is_finite() || ms < 0.0 || (!allow_zero && ms == 0.0) || ms > 3_600_000.0 {
        return Err(usage(format!(
            "{what} must be a number of milliseconds {} 3600000, got {ms}",
            if allow_zero {
                "from 0 to"
            } else {
                "above 0 and at most"
            }
        )));
    }
    Ok((ms * 1e6).round() as u64)
}

/// What one scenario produced.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    pub exchanges: Vec<Exchange>,
    pub frame_bytes: usize,
    /// Replies the initiator's verify rejected, by reason.
    pub rejected: Vec<(String, u64)>,
    /// Requests the responder's verify rejected, by reason.
    pub responder_drops: Vec<(String, u64)>,
    /// Valid replies that came after their exchange had been given up.
    pub stale: u64,
    /// When each exchange began (the initiator's part 1), CLOCK_MONOTONIC ns, in the order of
    /// `exchanges` (link outages are placed on this clock: `crate::outage`).
    pub starts_ns: Vec<u64>,
}

impl Outcome {
    pub fn lost(&self) -> usize {
        self.exchanges.iter().filter(|e| e.lost).count()
    }
}

/// Runs `s` at `site`; with `pcap`, the initiator records the frames it sends and receives.
pub fn run_scenario(site: &Site, s: &Scenario, pcap: Option<&std::path::Path>) -> Result<Outcome> {
    let frame_bytes = s.check()?;
    let profile = s.profile.profile();
    let forward = random_keys(profile)?;
    let backward = random_keys(profile)?;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (cpu_i, cpu_r) = match (s.pin, site) {
        // Each host has its own CPUs: both on their host's first.
        (true, Site::Hosts { .. }) => (Some(0), Some(0)),
        (true, _) => (Some(0), Some(1 % cpus)),
        (false, _) => (None, None),
    };
    let base = |role, link, ends, cpu| RoleSpec {
        role,
        profile,
        provider: s.provider,
        payload: s.payload,
        count: s.count,
        replications: s.replications,
        pause_ns: s.pause_ns,
        timeout_ns: s.timeout_ns,
        busy_poll: s.mode == Mode::BusyPoll,
        cpu,
        link,
        ends,
        forward: forward.clone(),
        backward: backward.clone(),
        pcap: None,
        channel: Default::default(),
        until_eof: false,
        watch_plain: false,
        rcvbuf: None,
        segments: false,
    };

    let (ini_ends, ns, hosts) = ends_of(site, profile, pcap)?;
    let res_ends = ini_ends.reversed();
    let (ini_place, res_place) = match (&ns, hosts) {
        (Some((a, b)), _) => (Place::Namespace(a), Place::Namespace(b)),
        (None, Some((a, b))) => (Place::Host(a), Place::Host(b)),
        (None, None) => (Place::Here, Place::Here),
    };
    // A node's failure across hosts names its host (exit 3).
    let on_host = |place: &Place<'_>, e: anyhow::Error| match place {
        Place::Host(h) => h.node_error(e),
        _ => e,
    };
    let res_link = match hosts {
        Some((_, r)) => link_spec_on(&r.spec.iface, profile, &res_ends),
        None => link_spec(ns.is_some(), profile, &res_ends, None),
    };
    let res_spec = base(Role::Responder, res_link, res_ends, cpu_r);
    let mut responder = spawn(&res_place, &res_spec).map_err(|e| on_host(&res_place, e))?;
    let mut res_out = BufReader::new(responder.stdout.take().expect("piped"));
    let port = match wait_ready(&mut res_out) {
        Ok(p) => p,
        Err(e) => {
            let _ = responder.kill();
            let err = child_stderr(&mut responder);
            let _ = responder.wait();
            let e = e.context(format!("the responder did not start: {err}"));
            return Err(on_host(&res_place, e));
        }
    };
    let ini_link = match hosts {
        Some((i, _)) => link_spec_on(&i.spec.iface, profile, &ini_ends),
        None => link_spec(ns.is_some(), profile, &ini_ends, Some(port)),
    };
    let mut ini_spec = base(Role::Initiator, ini_link, ini_ends, cpu_i);
    // The initiator runs in another directory context (`ip netns exec`): give it an absolute path.
    ini_spec.pcap = pcap.map(std::path::absolute).transpose()?;
    // Across hosts the initiator stops when its stdin closes: when the SSH channel is lost, or
    // when the responder's ends early (its host or connection lost), below.
    ini_spec.until_eof = hosts.is_some();
    // The responder's report is read while the initiator runs: if it ends early (its connection
    // lost), the initiator is told to stop at once.
    let ini_stdin: Arc<Mutex<(Option<ChildStdin>, bool)>> = Arc::new(Mutex::new((None, false)));
    let watch = ini_stdin.clone();
    let res_reader = std::thread::spawn(move || {
        let r = collect_responder(&mut res_out);
        let mut w = watch.lock().unwrap_or_else(|p| p.into_inner());
        w.0 = None;
        w.1 = true;
        r
    });
    let ini_result = spawn(&ini_place, &ini_spec).and_then(|mut c| {
        {
            let mut w = ini_stdin.lock().unwrap_or_else(|p| p.into_inner());
            if !w.1 {
                w.0 = c.stdin.take();
            }
        }
        collect_initiator(&mut c)
    });
    // Stop the responder whatever happened to the initiator.
    drop(responder.stdin.take());
    let res_result = res_reader
        .join()
        .unwrap_or_else(|_| Err(anyhow::anyhow!("the responder's reader panicked")));
    let res_err = child_stderr(&mut responder);
    let status = responder.wait()?;
    let res_failed = |e: anyhow::Error| on_host(&res_place, e);
    if hosts.is_some() && (res_result.is_err() || !status.success()) {
        // Across hosts, a lost responder is the cause even when the initiator then failed.
        return Err(res_failed(match res_result {
            Err(e) => e.context(format!("responder ({status}): {res_err}")),
            Ok(_) => anyhow::anyhow!("the responder failed ({status}): {res_err}"),
        }));
    }
    let ini = ini_result.map_err(|e| on_host(&ini_place, e))?;
    let res = res_result.with_context(|| format!("responder: {res_err}"))?;
    if !status.success() {
        bail!("the responder failed ({status}): {res_err}");
    }

    let starts_ns = ini.records.iter().map(|r| r.start).collect();
    let exchanges = exchanges_of(ini.records, res.log, hosts.is_some());
    Ok(Outcome {
        exchanges,
        frame_bytes,
        rejected: ini.rejects,
        responder_drops: res.drops,
        stale: ini.stale,
        starts_ns,
    })
}

/// The initiator's view of the two ends (the responder's is the reverse) and, on a testbed,
/// the two namespaces; across hosts, the two hosts.
#[allow(clippy::type_complexity)]
fn ends_of<'s>(
    site: &'s Site,
    profile: Profile,
    pcap: Option<&std::path::Path>,
) -> Result<(
    Ends,
    Option<(String, String)>,
    Option<(&'s Remote, &'s Remote)>,
)> {
    let mut hosts: Option<(&Remote, &Remote)> = None;
    let (ini_ends, ns) = match site {
        Site::Testbed {
            state,
            initiator,
            responder,
        } => {
            let a = node_addr(state, initiator)?;
            let b = node_addr(state, responder)?;
            (
                Ends {
                    local_mac: a.0,
                    peer_mac: b.0,
                    local_ip: a.1,
                    peer_ip: b.1,
                },
                Some((
                    state.namespace_of(initiator).map_err(net_err)?.to_string(),
                    state.namespace_of(responder).map_err(net_err)?.to_string(),
                )),
            )
        }
        Site::Loopback => (
            Ends {
                local_mac: topology::ecu_mac(0, 1),
                peer_mac: topology::ecu_mac(0, 2),
                local_ip: Ipv4Addr::LOCALHOST,
                peer_ip: Ipv4Addr::LOCALHOST,
            },
            None,
        ),
        Site::Hosts {
            initiator,
            responder,
        } => {
            if pcap.is_some() {
                return Err(usage(
                    "a capture (--pcap) is not taken across hosts: the initiator runs on \
                     another machine; capture there (tcpdump -i IFACE -w FILE)",
                ));
            }
            hosts = Some((initiator, responder));
            (
                Ends {
                    local_mac: initiator.mac,
                    peer_mac: responder.mac,
                    local_ip: host_ip(initiator, profile)?,
                    peer_ip: host_ip(responder, profile)?,
                },
                None,
            )
        }
    };
    Ok((ini_ends, ns, hosts))
}

/// The exchanges of a scenario: the initiator's records joined with the responder's log by
/// (replication, index); one missing from the log is lost. `across_hosts`: two monotonic
/// clocks, no direct one-way delay.
fn exchanges_of(
    records: Vec<IniRecord>,
    log: Vec<(u64, u64, u64, u64)>,
    across_hosts: bool,
) -> Vec<Exchange> {
    let by_id: HashMap<u64, (u64, u64, u64)> = log
        .into_iter()
        .map(|(id, v, p, at)| (id, (v, p, at)))
        .collect();
    records
        .into_iter()
        .map(|r| {
            let id = (u64::from(r.rep) << 32) | u64::from(r.idx);
            let mut e = Exchange {
                replication: r.rep,
                index: r.idx,
                payload_ns: r.payload,
                protect_ns: r.protect,
                round_trip_ns: r.rtt,
                verify_ns: r.verify,
                lost: r.lost,
                ..Exchange::default()
            };
            match by_id.get(&id) {
                Some(&(v, p, at)) if !r.lost => {
                    e.resp_verify_ns = v;
                    e.resp_protect_ns = p;
                    // Two hosts' monotonic clocks are not one clock: no direct one-way delay.
                    e.owd_direct_ns = if across_hosts {
                        None
                    } else {
                        at.checked_sub(r.start)
                    };
                }
                Some(_) => {}
                None => e.lost = true,
            }
            e
        })
        .collect()
}

fn spawn(place: &Place<'_>, spec: &RoleSpec) -> Result<Child> {
    spawn_role_at(place, "pingpong", spec, &format!("{:?}", spec.role))
}

/// A host's IPv4 address as one end of `profile`'s link: needed for ESP, SecOC and SOME/IP;
/// raw-Ethernet profiles do without (unspecified).
fn host_ip(h: &Remote, profile: Profile) -> Result<Ipv4Addr> {
    match h.ip {
        Some(ip) => Ok(ip),
        None if !profile.is_ip() && !profile.is_udp() => Ok(Ipv4Addr::UNSPECIFIED),
        None => Err(ivnsec_node::error::env_error(format!(
            "{}: interface {} has no IPv4 address, which {profile} needs; add one (ip addr add \
             ADDRESS/PREFIX dev {})",
            h.spec.label(),
            h.spec.iface,
            h.spec.iface
        ))),
    }
}

pub struct IniRecord {
    pub rep: u32,
    pub idx: u32,
    pub start: u64,
    pub payload: u64,
    pub protect: u64,
    pub rtt: u64,
    pub verify: u64,
    pub lost: bool,
}

pub struct IniLog {
    pub records: Vec<IniRecord>,
    pub rejects: Vec<(String, u64)>,
    pub stale: u64,
    /// Units the kernel dropped at the initiator's socket (full receive queue).
    pub socket_drops: u64,
}

pub fn collect_initiator(c: &mut Child) -> Result<IniLog> {
    let read = read_initiator(BufReader::new(c.stdout.take().expect("piped")));
    let err = child_stderr(c);
    let status = c.wait()?;
    if !status.success() {
        bail!("the initiator failed ({status}): {err}");
    }
    read.with_context(|| format!("the initiator failed ({status}): {err}"))
}

/// Reads one initiator report (up to its `END`).
pub fn read_initiator(out: impl BufRead) -> Result<IniLog> {
    let mut log = IniLog {
        records: Vec::new(),
        rejects: Vec::new(),
        stale: 0,
        socket_drops: 0,
    };
    read_report(out, "initiator", |f| {
        let num = |i| field_u64(f, i);
        match f[0] {
            "E" => log.records.push(IniRecord {
                rep: num(1)? as u32,
                idx: num(2)? as u32,
                start: num(3)?,
                payload: num(4)?,
                protect: num(5)?,
                rtt: num(6)?,
                verify: num(7)?,
                lost: num(8)? != 0,
            }),
            "REJECT" => log
                .rejects
                .push((f.get(1).unwrap_or(&"?").to_string(), num(2)?)),
            "STALE" => log.stale = num(1)?,
            "SOCKDROPS" => log.socket_drops = num(1)?,
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    Ok(log)
}

pub struct ResLog {
    /// Per accepted unit: exchange id, verify ns, protect ns, verify done (monotonic ns).
    pub log: Vec<(u64, u64, u64, u64)>,
    pub drops: Vec<(String, u64)>,
    /// Units the kernel dropped at the responder's sockets (full receive queues).
    pub socket_drops: u64,
}

pub fn collect_responder(out: &mut BufReader<ChildStdout>) -> Result<ResLog> {
    let mut r = ResLog {
        log: Vec::new(),
        drops: Vec::new(),
        socket_drops: 0,
    };
    read_report(out, "responder", |f| {
        let num = |i| field_u64(f, i);
        match f[0] {
            "R" => r.log.push((num(1)?, num(2)?, num(3)?, num(4)?)),
            "DROP" => r
                .drops
                .push((f.get(1).unwrap_or(&"?").to_string(), num(2)?)),
            "SOCKDROPS" => r.socket_drops = num(1)?,
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    Ok(r)
}

fn read_trim(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// The environment block of reports.
/// Which provider runs each primitive the scenarios need (`aes128: fast; hmac-sha256: …`), each
/// primitive once; `None` when none of them needs cryptography (only `plain`, `crc32`): the
/// environment then leaves `provider_chosen` out rather than saying "none".
pub fn providers_chosen(scenarios: &[Scenario]) -> Option<String> {
    let mut parts: Vec<String> = Vec::new();
    for s in scenarios {
        let needs = s.profile.profile().primitives();
        if needs.is_empty() {
            continue;
        }
        let line = ivnsec_crypto::describe_choice(s.provider, &needs, &s.profile.profile())
            .unwrap_or_else(|e| e.to_string());
        for part in line.split("; ") {
            if !parts.iter().any(|p| p == part) {
                parts.push(part.to_string());
            }
        }
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

pub fn environment(site: &Site, s: &Scenario, plan: &str) -> Map<String, Value> {
    let cpu = std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|c| {
        c.lines()
            .find_map(|l| l.strip_prefix("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    });
    let provider = s.provider.to_string();
    let mut m = Map::new();
    m.insert("ivnsec_version".into(), json!(env!("CARGO_PKG_VERSION")));
    m.insert("date_utc".into(), json!(now_utc()));
    m.insert("host".into(), json!(read_trim("/proc/sys/kernel/hostname")));
    m.insert(
        "kernel".into(),
        json!(read_trim("/proc/sys/kernel/osrelease")),
    );
    m.insert("cpu".into(), json!(cpu));
    m.insert(
        "cores".into(),
        json!(std::thread::available_parallelism().map_or(1, |n| n.get())),
    );
    m.insert("plan".into(), json!(plan));
    m.insert("transport".into(), json!(site.transport()));
    m.insert("mode".into(), json!(s.mode.as_str()));
    m.insert("pin".into(), json!(s.pin));
    m.insert("provider".into(), json!(provider));
    // Which provider runs each primitive of the profile under that choice (`auto` picks per
    // primitive and size), and `auto`'s whole table, for plans with several profiles.
    if let Some(chosen) = providers_chosen(std::slice::from_ref(s)) {
        m.insert("provider_chosen".into(), json!(chosen));
    }
    m.insert(
        "provider_auto_table".into(),
        json!(ivnsec_crypto::describe_auto_table()),
    );
    // Which table that is: the built-in one, or this machine's calibration (`ivnsec suites
    // --calibrate`), with its path, date and CPU.
    m.insert(
        "provider_auto_table_source".into(),
        json!(ivnsec_crypto::auto_table_source()),
    );
    m.insert(
        "openssl_library".into(),
        json!(ivnsec_crypto::openssl_version()),
    );
    m.insert("count".into(), json!(s.count));
    m.insert("replications".into(), json!(s.replications));
    m.insert("pause_ms".into(), json!(s.pause_ns as f64 / 1e6));
    m.insert("timeout_ms".into(), json!(s.timeout_ns as f64 / 1e6));
    m.insert(
        "clock".into(),
        json!(match site {
            Site::Hosts { .. } => {
                "CLOCK_MONOTONIC of each host, not one clock: no direct one-way delay \
                 (owd_direct empty); the one-way delays are estimated from round trips"
            }
            _ => "CLOCK_MONOTONIC, shared by every namespace of the host",
        }),
    );
    match site {
        Site::Testbed {
            state,
            initiator,
            responder,
        } => {
            let ns = |n: &str| state.namespace_of(n).ok();
            crate::clock::record_this_host(
                &mut m,
                &[
                    (initiator.as_str(), ns(initiator)),
                    (responder.as_str(), ns(responder)),
                ],
                &ivnsec_net::testbed::default_state_dir(),
            );
        }
        Site::Loopback => crate::clock::record_this_host(
            &mut m,
            &[("initiator", None), ("responder", None)],
            &ivnsec_net::testbed::default_state_dir(),
        ),
        Site::Hosts {
            initiator,
            responder,
        } => record_hosts(&mut m, initiator, responder),
    }
    m
}

/// The two hosts of a run across hosts in its environment, and each one's PTP state (two
/// machines, two clocks), read with pmc over the same SSH.
pub fn record_hosts(
    m: &mut Map<String, Value>,
    initiator: &crate::hosts::Remote,
    responder: &crate::hosts::Remote,
) {
    m.insert(
        "hosts".into(),
        json!([
            crate::hosts::describe(initiator),
            crate::hosts::describe(responder)
        ]),
    );
    let set = crate::clock::ClockSet::probe(
        &[&initiator.spec, &responder.spec],
        |_| crate::clock::DEFAULT_UDS.to_string(),
        crate::clock::DEFAULT_MAX_OFFSET_NS,
    );
    crate::clock::record_environment(m, &set);
}

/// `YYYY-MM-DDTHH:MM:SSZ` now.
pub fn now_utc() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (the proleptic Gregorian algorithm of H. Hinnant).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Statistics and verdicts of one scenario's outcome.
pub struct Judged {
    pub sections: Vec<(Section, Option<SectionStats>)>,
    pub verdicts: Verdicts,
}

pub fn judge(o: &Outcome, req: &Requirements) -> Judged {
    let sections: Vec<(Section, Option<SectionStats>)> = Section::ALL
        .iter()
        .map(|&s| (s, SectionStats::of(s, &o.exchanges)))
        .collect();
    let get = |s: Section| {
        sections
            .iter()
            .find(|(x, _)| *x == s)
            .and_then(|(_, v)| v.as_ref())
    };
    let verdicts = Verdicts::judge(
        req,
        get(Section::OwdForward),
        get(Section::OwdBackward),
        get(Section::Rtt),
        o.lost(),
    );
    Judged { sections, verdicts }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(profile: &str, provider: ProviderChoice) -> Scenario {
        Scenario {
            profile: profile.parse().unwrap(),
            payload: 64,
            count: 1,
            replications: 1,
            pause_ns: 0,
            timeout_ns: 1,
            mode: Mode::Blocking,
            pin: false,
            provider,
        }
    }

    /// The environment says which provider runs each primitive under the scenario's choice
    /// (`auto` picks per primitive and size), beside the choice itself and `auto`'s table.
    #[test]
    fn environment_names_the_chosen_providers() {
        let env = environment(
            &Site::Loopback,
            &scenario("chacha20-poly1305", ProviderChoice::Auto),
            "p",
        );
        assert_eq!(env["provider"], "auto");
        assert_eq!(
            env["provider_chosen"],
            "chacha20-poly1305: fast up to 2048 B, openssl above 2048 B"
        );
        let table = env["provider_auto_table"].as_str().unwrap();
        assert!(table.contains("hmac-sha256: portable"), "{table}");
        // Tests run with IVNSEC_AUTO_TABLE=builtin (.cargo/config.toml).
        assert_eq!(
            env["provider_auto_table_source"],
            ivnsec_crypto::auto_table_source()
        );
        assert!(
            env["provider_auto_table_source"]
                .as_str()
                .unwrap()
                .starts_with("built-in"),
            "{env:?}"
        );
        assert!(
            env["openssl_library"]
                .as_str()
                .unwrap()
                .starts_with("OpenSSL")
        );
        let env = environment(
            &Site::Loopback,
            &scenario("aes128-cbc-hmac-sha256", ProviderChoice::Portable),
            "p",
        );
        assert_eq!(env["provider"], "portable");
        assert_eq!(
            env["provider_chosen"],
            "aes128: portable; hmac-sha256: portable"
        );
        // A profile without cryptography names no provider (it used to say "none"); across a
        // plan's scenarios each primitive is named once.
        let env = environment(
            &Site::Loopback,
            &scenario("plain", ProviderChoice::Auto),
            "p",
        );
        assert!(env.get("provider_chosen").is_none(), "{env:?}");
        let all = [
            scenario("plain", ProviderChoice::Auto),
            scenario("aes128-cbc-hmac-sha256", ProviderChoice::Portable),
            scenario("hmac-sha256", ProviderChoice::Portable),
        ];
        assert_eq!(
            providers_chosen(&all).as_deref(),
            Some("aes128: portable; hmac-sha256: portable")
        );
        assert_eq!(providers_chosen(&all[..1]), None);
        // A provider that lacks the profile says so instead of naming one.
        let env = environment(
            &Site::Loopback,
            &scenario("hmac-sha256", ProviderChoice::OpenSsl),
            "p",
        );
        assert!(
            env["provider_chosen"]
                .as_str()
                .unwrap()
                .contains("does not implement"),
            "{}",
            env["provider_chosen"]
        );
    }
}
