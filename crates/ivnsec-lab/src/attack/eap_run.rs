//! Runs `ivnsec attack --eap` ([`super::eap`]): on the attack testbed (or a running one with
//! three ECUs), sensor1 runs `ivnsec macsec up --eap-tls` (the supplicant, with a certificate of
//! a PKI made for the run), the consumer `ivnsec macsec up --authenticator` (key server,
//! priority 0, re-authenticating every [`REAUTH_SECONDS`] so that Access-Requests flow while the
//! attacker works); the RADIUS server is a FreeRADIUS of the run's own in sensor1's namespace,
//! on sensor1's plain address, so that RADIUS crosses the switch where the attacker (sensor2)
//! sees it. Once EAP-TLS succeeded and MKA secured the link, they ping each other through their
//! TAPs; for each class the attacker injects while the ping runs; the verdict comes from the
//! members' status files (PAE and RADIUS drop counters, sessions) and events files (EAP
//! outcomes, CAK changes), and from the ping.
//!
//! The switches run as hubs and forward the PAE group address, as for `--mka`
//! ([`super::mka_run`]).

use std::collections::{BTreeMap, HashSet};
use std::ffi::OsString;
use std::io::{BufReader, Write};
use std::net::Ipv4Addr;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use ivnsec_core::profile::NamedProfile;
use ivnsec_crypto::ProviderChoice;
use ivnsec_net::testbed;
use ivnsec_net::topology::{self, Topology};
use serde_json::Value;

use super::AttackResult;
use super::eap::{EapAccount, EapAttack, EapAttackSpec, RADIUS_PORT};
use super::mka_run::{GroupForwarding, Member, Members, Ping, SETTLE, judged_drops, moved_drops};
use super::roles::Roles;
use super::run::{Outcome, Switches, TempDir, chosen, open_production, open_testbed};
use crate::process::{child_stderr, read_report, spawn_role};
use crate::radius::{Client, FreeRadius};
use crate::site::{net_err, node_addr};
use crate::stats::quantile_sorted;
use ivnsec_node::error::{env_error, usage};
use ivnsec_node::pki::{self, Algo, Layout};

/// Default frames per class.
pub const DEFAULT_COUNT: u64 = 1000;
/// The authenticator re-authenticates the supplicant this often during the run.
pub const REAUTH_SECONDS: &str = "2";
/// Supplicants the authenticator serves at once (its session bound).
pub const MAX_SUPPLICANTS: u64 = 16;
/// radius-forged-accept lasts at least this long (two re-authentications and more).
const RADIUS_MIN_SECONDS: f64 = 5.0;
/// The vehicle of the run's PKI.
const VIN: &str = "WVWZZZ1JZXW000001";

/// The settings of one `ivnsec attack --eap` run.
#[derive(Clone, Debug)]
pub struct EapAttackConfig {
    /// MACsec profiles (default macsec-gcm-aes-128).
    pub profiles: Vec<NamedProfile>,
    /// The classes (empty: all four), run in the order of [`EapAttack::ALL`].
    pub attacks: Vec<EapAttack>,
    /// Frames injected per class and profile.
    pub count: u64,
    pub provider: ProviderChoice,
    /// Use this running testbed (three ECUs at least) instead of building one.
    pub testbed: Option<String>,
    /// Build this topology instead of `sensors:2`: only `production`.
    pub topology: Option<Topology>,
}

/// Run `index` (from 1) of `total`: `class` against `profile`.
pub type EapProgress<'a> = (usize, usize, &'a str, EapAttack);

/// Runs every 802.1X class of `cfg` against every profile; `progress` hears each run before it
/// starts and `None` at the end. Needs root and FreeRADIUS.
pub fn run_eap_attacks(
    cfg: &EapAttackConfig,
    progress: &mut dyn FnMut(Option<EapProgress<'_>>),
) -> Result<Outcome> {
    if !(1..=1_000_000).contains(&cfg.count) {
        return Err(usage("--count must be 1 to 1000000 with --eap"));
    }
    let mka_cfg = super::mka_run::MkaAttackConfig {
        profiles: cfg.profiles.clone(),
        attacks: Vec::new(),
        count: cfg.count,
        provider: cfg.provider,
        testbed: None,
        topology: None,
    };
    let profiles = mka_cfg.checked_profiles()?;
    let classes = chosen(&cfg.attacks, &EapAttack::ALL);
    match (cfg.topology, cfg.testbed.as_deref()) {
        (None | Some(Topology::Production), None) | (None, Some(_)) => {}
        (Some(t), _) => {
            return Err(usage(format!(
                "--eap --topology {t}: the 802.1X classes run on sensors:2 (the default), on \
                 production, or on a running testbed given with --testbed (not both)"
            )));
        }
    }
    testbed::check_environment().map_err(|e| {
        env_error(format!(
            "{e}; `ivnsec attack --eap` runs a supplicant, an authenticator and FreeRADIUS on a \
             testbed and needs root (run it with sudo)"
        ))
    })?;
    let (owned, roles) = match cfg.topology {
        None => open_testbed(cfg.testbed.as_deref())?,
        Some(_) => open_production()?,
    };
    let switches = Switches::hub(&roles.state)?;
    let _eapol = GroupForwarding::on(&switches.switches)?;
    let tmp = TempDir::new()?;
    let ns_of = |name: &str| -> Result<String> {
        Ok(roles.state.namespace_of(name).map_err(net_err)?.to_string())
    };
    let (sup_ns, auth_ns) = (ns_of(&roles.sender)?, ns_of(&roles.receiver)?);
    let (sup_mac, sup_ip) = node_addr(&roles.state, &roles.sender)?;
    let (auth_mac, auth_ip) = node_addr(&roles.state, &roles.receiver)?;

    // The run's PKI, the supplicant's certificate, the RADIUS secret.
    let pki_dir = tmp.0.join("pki");
    pki::init(&pki_dir, VIN, false, Algo::EcdsaP256).context("the run's PKI")?;
    pki::issue(&pki_dir, "sensor1", Algo::EcdsaP256, 30).context("the supplicant's certificate")?;
    let layout = Layout::new(&pki_dir);
    let mut secret = [0u8; 16];
    ivnsec_crypto::PORTABLE
        .rng
        .fill(&mut secret)
        .map_err(|e| anyhow::anyhow!("random generator: {e}"))?;
    let secret = hex::encode(secret);
    let secret_file = tmp.0.join("radius.secret");
    write_secret(&secret_file, &secret)?;
    let mut radius = FreeRadius::start(
        &sup_ns,
        &tmp.0.join("radius"),
        &pki_dir,
        &[Client {
            addr: auth_ip.to_string(),
            secret,
        }],
    )?;

    let sup_args: Vec<OsString> = vec![
        "--eap-tls".into(),
        "--cert".into(),
        layout.ecu_pem("sensor1").into(),
        "--key".into(),
        layout.ecu_key("sensor1").into(),
        "--ca".into(),
        layout.ca_pem().into(),
        "--hello-seconds".into(),
        "1".into(),
        "--eap-start-seconds".into(),
        "1".into(),
    ];
    let auth_args: Vec<OsString> = vec![
        "--authenticator".into(),
        "--radius".into(),
        format!("{sup_ip}:{RADIUS_PORT}").into(),
        "--radius-secret".into(),
        secret_file.clone().into(),
        "--priority".into(),
        "0".into(),
        "--reauth-seconds".into(),
        REAUTH_SECONDS.into(),
        "--max-supplicants".into(),
        MAX_SUPPLICANTS.to_string().into(),
        "--hello-seconds".into(),
        "1".into(),
    ];
    let net = Net {
        sup_mac,
        sup_ip,
        auth_mac,
        auth_ip,
    };
    let total = profiles.len() * classes.len();
    let mut results = Vec::new();
    let stopped = crate::interrupt::requested;
    'profiles: for profile in &profiles {
        if stopped() {
            break;
        }
        let dir = tmp.0.join(profile.name().replace('/', "_"));
        let started = (|| -> Result<Members> {
            let auth = Member::start(
                &auth_ns,
                auth_mac,
                &dir.join("authenticator"),
                &auth_args,
                profile.name(),
                cfg.provider,
            )?;
            let sup = Member::start(
                &sup_ns,
                sup_mac,
                &dir.join("supplicant"),
                &sup_args,
                profile.name(),
                cfg.provider,
            )?;
            Members::secure(vec![sup, auth])
        })();
        let mut members = match started {
            Err(_) if stopped() => break,
            Err(e) => {
                return Err(e.context(format!(
                    "802.1X did not secure the link (FreeRADIUS said: {})",
                    radius.log_tail(20)
                )));
            }
            Ok(m) => m,
        };
        for &attack in &classes {
            if stopped() {
                break 'profiles;
            }
            progress(Some((results.len() + 1, total, profile.name(), attack)));
            let r = match run_class(&roles, &mut members, &net, profile, attack, cfg) {
                Err(_) if stopped() => break 'profiles,
                r => r.with_context(|| format!("{profile}, {}", attack.name()))?,
            };
            results.push(r);
        }
        members.stop()?;
    }
    progress(None);
    radius.stop();
    drop(radius);
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

/// The shared secret, mode 0600 (the authenticator refuses a file others can read).
fn write_secret(path: &Path, secret: &str) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    writeln!(f, "{secret}").with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// The addresses of the supplicant (also the RADIUS server's) and the authenticator.
struct Net {
    sup_mac: [u8; 6],
    sup_ip: Ipv4Addr,
    auth_mac: [u8; 6],
    auth_ip: Ipv4Addr,
}

fn dot1x(st: &Value) -> &Value {
    &st["key_source_state"]["dot1x"]
}

fn counts(v: &Value) -> BTreeMap<String, u64> {
    v.as_object()
        .map(|o| {
            o.iter()
                .map(|(k, v)| (k.clone(), v.as_u64().unwrap_or(0)))
                .collect()
        })
        .unwrap_or_default()
}

/// The PAE drops of a member's status, and the RADIUS client's as `radius.REASON`.
fn drops(st: &Value) -> BTreeMap<String, u64> {
    let pae = &dot1x(st)["pae"];
    let mut d = counts(&pae["drops"]);
    for (k, v) in counts(&pae["radius"]["drops"]) {
        d.insert(format!("radius.{k}"), v);
    }
    d
}

fn radius_accepts(st: &Value) -> u64 {
    dot1x(st)["pae"]["radius"]["accepts"].as_u64().unwrap_or(0)
}

fn mac_hex(m: [u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// One class against the running supplicant (`members.m[0]`) and authenticator (`m[1]`).
fn run_class(
    roles: &Roles,
    members: &mut Members,
    net: &Net,
    profile: &NamedProfile,
    attack: EapAttack,
    cfg: &EapAttackConfig,
) -> Result<AttackResult> {
    // Events first, then the status: an Access-Accept between the two is then counted among
    // the legitimate successes, never as an extra one.
    let offsets: Vec<usize> = members
        .m
        .iter()
        .map(|m| m.events().map(|e| e.len()))
        .collect::<Result<_>>()?;
    let now = ivnsec_node::macsec::status::now_unix();
    let before: Vec<Value> = members
        .m
        .iter()
        .map(|m| m.status_after(now))
        .collect::<Result<_>>()?;
    let ping = Ping::start(&members.m[0].ns, members.addrs[1])?;
    std::thread::sleep(SETTLE);
    let x_ns = roles
        .state
        .namespace_of(&roles.attacker)
        .map_err(net_err)?
        .to_string();
    let (x_mac, _) = node_addr(&roles.state, &roles.attacker)?;
    let spec = EapAttackSpec {
        attack,
        count: cfg.count,
        ifname: topology::ECU_IF.to_string(),
        attacker_mac: x_mac,
        supplicant_mac: net.sup_mac,
        authenticator_mac: net.auth_mac,
        authenticator_ip: net.auth_ip,
        radius_mac: net.sup_mac,
        radius_ip: net.sup_ip,
        min_seconds: if attack == EapAttack::RadiusForgedAccept {
            RADIUS_MIN_SECONDS
        } else {
            0.0
        },
    };
    let attacker = run_attacker(&x_ns, &spec);
    std::thread::sleep(SETTLE);
    let (sent, received, rtts) = ping.stop()?;
    let (injected, answered, seconds) = attacker?;
    let now = ivnsec_node::macsec::status::now_unix();
    let after: Vec<Value> = members
        .m
        .iter()
        .map(|m| m.status_after(now))
        .collect::<Result<_>>()?;

    let dropped = moved_drops(&before, &after, drops);
    let judged = judged_drops(&dropped, attack.judged_by());

    let mut account = account(members, &offsets, &before[1], &after[1], net)?;
    account.requests_answered = answered;
    account.ping_rtt_p50_us = (!rtts.is_empty()).then(|| quantile_sorted(&rtts, 0.5));
    account.ping_rtt_max_us = rtts.last().copied();
    let accepted = account.accepted();
    Ok(AttackResult {
        profile: profile.clone(),
        attack: attack.name(),
        injected,
        accepted,
        dropped,
        not_seen: injected.saturating_sub(judged),
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
        mka: None,
        eap: Some(account),
        gateway: None,
        not_run: None,
    })
}

/// What the events and the authenticator's status say about the class.
fn account(
    members: &Members,
    offsets: &[usize],
    auth_before: &Value,
    auth_after: &Value,
    net: &Net,
) -> Result<EapAccount> {
    // A supplicant's success may be written just after the authenticator's: read again once
    // before calling a CKN foreign.
    let mut a = EapAccount::default();
    for attempt in 0..2 {
        let sup_events = members.m[0].events()?;
        let auth_events = members.m[1].events()?;
        a = judge(
            [&sup_events, &auth_events],
            offsets,
            [auth_before, auth_after],
            net.sup_mac,
        );
        if a.foreign_ckns == 0 || attempt == 1 {
            break;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    Ok(a)
}

/// The account of a class from the supplicant's and the authenticator's events (those from
/// `offsets` on are the class's) and the authenticator's status before and after it.
fn judge(
    [sup_events, auth_events]: [&[Value]; 2],
    offsets: &[usize],
    [auth_before, auth_after]: [&Value; 2],
    sup_mac: [u8; 6],
) -> EapAccount {
    let mut a = EapAccount {
        max_sessions: MAX_SUPPLICANTS,
        ..EapAccount::default()
    };
    let legit_ckns: HashSet<&str> = sup_events
        .iter()
        .filter(|e| e["event"] == "eap_success")
        .filter_map(|e| e["ckn"].as_str())
        .collect();
    for (ev, &off) in [sup_events, auth_events].into_iter().zip(offsets) {
        for e in ev.iter().skip(off) {
            match e["event"].as_str() {
                Some("eap_failure" | "cak_removed") => a.forged_state_changes += 1,
                Some("cak_changed") if !e["ca"].as_str().is_some_and(|c| c.starts_with("eap:")) => {
                    a.forged_state_changes += 1
                }
                _ => {}
            }
        }
    }
    a.legit_reauths = sup_events
        .iter()
        .skip(offsets[0])
        .filter(|e| e["event"] == "eap_success")
        .count() as u64;
    let auth_successes: Vec<&Value> = auth_events
        .iter()
        .skip(offsets[1])
        .filter(|e| e["event"] == "eap_success")
        .collect();
    a.foreign_ckns = auth_successes
        .iter()
        .filter(|e| !e["ckn"].as_str().is_some_and(|c| legit_ckns.contains(c)))
        .count() as u64;
    let legit_accepts = auth_successes.len() as u64 - a.foreign_ckns;
    a.extra_accepts = radius_accepts(auth_after)
        .saturating_sub(radius_accepts(auth_before))
        .saturating_sub(legit_accepts);
    let pae = &dot1x(auth_after)["pae"];
    a.sessions_after = pae["sessions"].as_array().map_or(0, |s| s.len() as u64);
    let sup = mac_hex(sup_mac);
    a.supplicant_kept = pae["authenticated"]
        .as_array()
        .is_some_and(|l| l.iter().any(|m| m.as_str() == Some(sup.as_str())));
    a
}

impl EapAccount {
    /// What counts as accepted: forged state changes, foreign CKNs, extra accepts, sessions
    /// above the bound, and the supplicant's session lost.
    pub fn accepted(&self) -> u64 {
        self.forged_state_changes
            + self.foreign_ckns
            + self.extra_accepts
            + self.sessions_after.saturating_sub(self.max_sessions)
            + u64::from(!self.supplicant_kept)
    }
}

/// Runs the 802.1X attacker to its end; returns (frames injected, Access-Requests answered,
/// seconds).
fn run_attacker(ns: &str, spec: &EapAttackSpec) -> Result<(u64, u64, f64)> {
    let mut child = spawn_role(Some(ns), "eap-attack", spec, "802.1X attacker")?;
    drop(child.stdin.take());
    let out = BufReader::new(child.stdout.take().expect("piped"));
    let (mut injected, mut answered, mut seconds) = (None, 0, 0.0);
    let read = read_report(out, "802.1X attacker", |f| {
        match f {
            ["INJECTED", n] => injected = n.parse().ok(),
            ["ANSWERED", n] => answered = n.parse().unwrap_or(0),
            ["SECONDS", s] => seconds = s.parse().unwrap_or(0.0),
            _ => return Ok(false),
        }
        Ok(true)
    });
    let err = child_stderr(&mut child);
    let status = child.wait()?;
    if !status.success() {
        bail!("the 802.1X attacker failed ({status}): {err}");
    }
    read.with_context(|| format!("802.1X attacker: {err}"))?;
    match injected {
        Some(n) => Ok((n, answered, seconds)),
        None => bail!("the 802.1X attacker ended without its count: {err}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SUP: [u8; 6] = [2, 0, 0, 0, 0, 1];

    fn auth_status(accepts: u64, sessions: usize, authenticated: &[&str]) -> Value {
        json!({"key_source_state": {"dot1x": {"pae": {
            "sessions": vec![json!({}); sessions],
            "authenticated": authenticated,
            "drops": {"too_many_sessions": 3},
            "radius": {"accepts": accepts, "drops": {"unknown_id": 5}},
        }}}})
    }

    /// A legitimate re-authentication during the class is not counted.
    #[test]
    fn legitimate_reauthentications_count_nothing() {
        let sup = [
            json!({"event": "eap_success", "ckn": "aa"}),
            json!({"event": "eap_success", "ckn": "bb"}),
            json!({"event": "cak_changed", "ca": "eap:02:00:00:00:00:02", "ckn": "bb"}),
        ];
        let auth = [
            json!({"event": "eap_success", "ckn": "aa"}),
            json!({"event": "eap_success", "ckn": "bb"}),
            json!({"event": "cak_changed", "ca": "eap:02:00:00:00:00:01", "ckn": "bb"}),
        ];
        let a = judge(
            [&sup, &auth],
            &[1, 1],
            [
                &auth_status(1, 1, &["02:00:00:00:00:01"]),
                &auth_status(2, 1, &["02:00:00:00:00:01"]),
            ],
            SUP,
        );
        assert_eq!(a.accepted(), 0, "{a:?}");
        assert_eq!(a.legit_reauths, 1);
        assert!(a.supplicant_kept);
        assert_eq!(
            drops(&auth_status(0, 0, &[]))["radius.unknown_id"],
            5,
            "RADIUS drops are read as radius.REASON"
        );
    }

    /// Each sign of a forged frame taken is counted.
    #[test]
    fn forged_outcomes_are_counted() {
        let sup = [
            json!({"event": "eap_success", "ckn": "aa"}),
            json!({"event": "eap_failure", "reason": "EAP-Failure"}),
            json!({"event": "cak_removed", "why": "logoff"}),
        ];
        let auth = [
            json!({"event": "eap_success", "ckn": "aa"}),
            // A CAK from keys the supplicant never had.
            json!({"event": "eap_success", "ckn": "ff"}),
            json!({"event": "cak_changed", "ca": "fallback", "ckn": "00"}),
        ];
        let a = judge(
            [&sup, &auth],
            &[1, 1],
            [
                &auth_status(1, 1, &["02:00:00:00:00:01"]),
                &auth_status(4, MAX_SUPPLICANTS as usize + 2, &[]),
            ],
            SUP,
        );
        assert_eq!(a.forged_state_changes, 3, "{a:?}");
        assert_eq!(a.foreign_ckns, 1, "{a:?}");
        // Three accepts, none of them a legitimate success.
        assert_eq!(a.extra_accepts, 3, "{a:?}");
        assert_eq!(a.sessions_after, MAX_SUPPLICANTS + 2);
        assert!(!a.supplicant_kept);
        assert_eq!(a.accepted(), 3 + 1 + 3 + 2 + 1);
    }
}
