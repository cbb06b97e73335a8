//! 802.1X as the key source of a SecY (`macsec up --eap-tls`, `--authenticator`; `gateway`
//! with the supplicant options; docs/8021x.md): the CAK of MKA comes from EAP-TLS.
//!
//! - **I/O**: one AF_PACKET socket on the protected interface for EtherType 0x888E (EAPOL),
//!   member of the PAE group address. Its EAP frames go to the core's PAE
//!   ([`Supplicant`] or [`Authenticator`]); MKPDUs (EAPOL type 5) are the MKA participants'
//!   (each has its own socket); the socket only wakes the control thread for them. The
//!   authenticator reaches its RADIUS server through [`RadiusClient`].
//! - **CAKs**: every CAK moves the SecY through the [`CaChain`] (make-before-break across
//!   CAKs, [`Stack::Keep`]):
//!   - the fallback CAK (`--fallback-psk`, a pre-shared CAK: 802.1X-2020's fallback CA) from
//!     the start, and again whenever EAP fails (RADIUS down, re-authentication refused);
//!   - the pairwise CAK derived from each EAP-TLS success (802.1X-2020 6.2.2: from the MSK,
//!     the EAP Session-Id and both MACs);
//!   - with `--group-ca` on the authenticator: one random group CAK, handed to every
//!     authenticated supplicant by MKA's Distributed CAK (802.1X-2020 9.8) in its pairwise
//!     CA. The authenticator's pairwise participants then distribute no SAK of their own;
//!     every member transmits under the group CA's SAK.
//! - **Failure** (EAP-Failure, TLS refused, RADIUS unreachable, logoff): the fallback CAK if
//!   there is one, else no CAK at all: every SA is retired and no data frame passes. Each
//!   failure is an event with its reason and a count in the status.

use std::collections::BTreeMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use ivnsec_core::crypto::CryptoProvider;
use ivnsec_core::pae::{
    self, AuthFailure, Authenticator, AuthenticatorConfig, AuthenticatorEvent, ServerAnswer,
    Supplicant, SupplicantConfig, SupplicantEvent, cak,
};
use ivnsec_core::wire::eapol;
use ivnsec_net::sys::{self, PollEntry, RawSocket};
use serde_json::{Value, json};

use super::radius::{AccessRequest, RadiusAnswer, RadiusClient, RadiusConfig, read_secret};
use super::tls::{EapTlsSettings, client_config, factory};
use crate::error::usage;
use crate::keys::psk::{self, Psk};
use crate::macsec::chain::{CaChain, Params, Stack, participant};
use crate::macsec::mka::MkaKeys;
use crate::macsec::{KeySource, SecyControl, open_err};

/// Frames handled per poll before timers get their turn.
const MAX_RX_PER_POLL: usize = 256;
/// Longest wait between two polls: MKPDUs wake the wait too (same EtherType).
const MAX_WAIT: Duration = Duration::from_millis(50);
/// Label of the fallback CAK in the chain.
const FALLBACK: &str = "fallback";
/// Label prefix of a group CAK.
const GROUP: &str = "group";

/// The 802.1X timers (IEEE 802.1X-2020 Table 8-x and 12.x defaults unless set).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PaeTimers {
    /// Supplicant: EAPOL-Start every this long until an authenticator answers (30 s).
    pub start: Duration,
    /// Supplicant: quiet this long after a failure (60 s); authenticator: quiet period of a
    /// supplicant that failed.
    pub held: Duration,
    /// Supplicant: a conversation with no request for this long failed (30 s).
    pub auth: Duration,
    /// Authenticator: re-authenticate every supplicant this often (none by default).
    pub reauth: Option<Duration>,
}

impl Default for PaeTimers {
    fn default() -> PaeTimers {
        PaeTimers {
            start: Duration::from_secs(30),
            held: Duration::from_secs(60),
            auth: Duration::from_secs(30),
            reauth: None,
        }
    }
}

/// The supplicant's settings.
#[derive(Clone, Debug)]
pub struct SupplicantSettings {
    pub tls: EapTlsSettings,
    /// The EAP identity (default: the certificate file's stem, the ECU name `ivnsec pki`
    /// gives it).
    pub identity: Option<String>,
}

/// The authenticator's settings.
#[derive(Clone, Debug)]
pub struct AuthenticatorSettings {
    /// The RADIUS server, host:port (port 1812 when omitted).
    pub radius: String,
    /// File holding the RADIUS shared secret (mode 0600).
    pub secret: PathBuf,
    /// Hand one group CAK to every authenticated supplicant (several on this port).
    pub group_ca: bool,
    /// Supplicants this port serves at once.
    pub max_supplicants: usize,
    /// RADIUS: seconds before a retransmission, and how many tries.
    pub radius_timeout: Duration,
    pub radius_tries: u32,
}

/// Which end of 802.1X this SecY is.
#[derive(Clone, Debug)]
pub enum Role {
    Supplicant(SupplicantSettings),
    Authenticator(AuthenticatorSettings),
}

/// The settings of the 802.1X key source.
#[derive(Clone, Debug)]
pub struct Dot1xSettings {
    pub role: Role,
    /// The fallback CAK (a PSK file as `--psk` takes).
    pub fallback: Option<PathBuf>,
    pub timers: PaeTimers,
}

/// A supplicant's EAP identity: the given one, else the certificate file's stem.
fn identity(s: &SupplicantSettings) -> Vec<u8> {
    match &s.identity {
        Some(i) => i.as_bytes().to_vec(),
        None => s
            .tls
            .cert
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "ivnsec".into())
            .into_bytes(),
    }
}

fn ns(d: Duration) -> u64 {
    d.as_nanos().min(u128::from(u64::MAX)) as u64
}

/// The core PAE and what drives it.
enum Pae {
    Supplicant {
        pae: Box<Supplicant>,
        /// A pairwise participant run beside the group CA after a re-authentication: it only
        /// carries the Distributed CAK.
        side: Option<Box<MkaKeys>>,
    },
    Authenticator {
        pae: Box<Authenticator>,
        radius: Box<RadiusClient>,
        radius_addr: SocketAddr,
        /// The group CAK (`--group-ca`).
        group: Option<Psk>,
        /// Authenticated supplicants, with their pairwise participant in group mode.
        sessions: BTreeMap<[u8; 6], Session>,
    },
}

struct Session {
    ckn: Vec<u8>,
    /// Group mode: the pairwise participant that distributes the group CAK.
    side: Option<MkaKeys>,
}

/// Counts of the EAP outcomes (status).
#[derive(Default, Debug)]
struct Outcomes {
    successes: u64,
    failures: u64,
    last_failure: Option<String>,
    fallback_switches: u64,
}

/// The key source of `macsec up --eap-tls` / `--authenticator`.
pub struct Dot1xKeys {
    iface: String,
    own_mac: [u8; 6],
    chain: CaChain,
    pae: Pae,
    fallback: Option<Psk>,
    fallback_file: Option<PathBuf>,
    provider: &'static CryptoProvider,
    sock: Option<RawSocket>,
    rxbuf: Vec<u8>,
    txbuf: Vec<u8>,
    outcomes: Outcomes,
}

impl Dot1xKeys {
    /// Checks and loads everything before anything is created: the certificates and the TLS
    /// configuration, the RADIUS secret and address, the fallback CAK, the MKA settings.
    pub fn new(s: &Dot1xSettings, params: Params, own_mac: [u8; 6]) -> Result<Dot1xKeys> {
        let provider = ivnsec_crypto::select_primitives(
            params.provider,
            &ivnsec_core::mka::kdf::primitives(16).map_err(|e| usage(e.to_string()))?,
            &"802.1X (AES-CMAC for the CAK and CKN)",
        )
        .map_err(|e| usage(e.to_string()))?;
        let fallback = match &s.fallback {
            Some(f) => {
                Some(psk::load(f).with_context(|| format!("--fallback-psk {}", f.display()))?)
            }
            None => None,
        };
        let now = sys::monotonic_ns();
        let pae = match &s.role {
            Role::Supplicant(sup) => {
                let cfg = client_config(&sup.tls)?;
                let name = sup
                    .tls
                    .server_name
                    .clone()
                    .unwrap_or_else(|| "eap-server".into());
                let mut c = SupplicantConfig::new(own_mac, identity(sup));
                c.start_period_ns = ns(s.timers.start);
                c.held_period_ns = ns(s.timers.held);
                c.auth_period_ns = ns(s.timers.auth);
                Pae::Supplicant {
                    pae: Box::new(Supplicant::new(c, factory(cfg, name), now)),
                    side: None,
                }
            }
            Role::Authenticator(a) => {
                let addr = resolve_radius(&a.radius)?;
                let secret = read_secret(&a.secret)?;
                let radius = RadiusClient::new(RadiusConfig {
                    server: addr,
                    secret,
                    nas_identifier: format!("ivnsec-{}", params.iface),
                    timeout: a.radius_timeout,
                    // The client's retries are retransmissions after the first send.
                    retries: a.radius_tries.saturating_sub(1),
                    framed_mtu: 1400,
                })
                .with_context(|| format!("--radius {}", a.radius))?;
                let mut c = AuthenticatorConfig::new(own_mac);
                c.max_sessions = a.max_supplicants;
                c.quiet_period_ns = ns(s.timers.held);
                c.reauth_period_ns = s.timers.reauth.map(ns);
                // The RADIUS client retransmits itself and reports Timeout; the PAE waits a
                // little longer than all its tries.
                c.server_timeout_ns = ns(a.radius_timeout * (a.radius_tries + 2));
                let group = if a.group_ca {
                    Some(Psk::generate(128, None)?)
                } else {
                    None
                };
                Pae::Authenticator {
                    pae: Box::new(Authenticator::new(c, now)),
                    radius: Box::new(radius),
                    radius_addr: addr,
                    group,
                    sessions: BTreeMap::new(),
                }
            }
        };
        let mut chain = CaChain::new(params, Stack::Keep);
        if let Some(f) = &fallback {
            let p = participant(chain.params(), f, &fallback_source(&s.fallback))?;
            chain = CaChain::with(chain.params().clone(), Stack::Keep, p, FALLBACK, f.ckn());
        }
        let max = match &pae {
            Pae::Supplicant { pae, .. } => pae.max_frame_len(),
            Pae::Authenticator { pae, .. } => pae.max_frame_len(),
        };
        Ok(Dot1xKeys {
            iface: chain.params().iface.clone(),
            own_mac,
            chain,
            pae,
            fallback,
            fallback_file: s.fallback.clone(),
            provider,
            sock: None,
            rxbuf: vec![0u8; 2048],
            txbuf: vec![0u8; max.max(1600)],
            outcomes: Outcomes::default(),
        })
    }

    /// The CAK and CKN of an EAP success between `supplicant` and `authenticator`.
    fn derive(
        &self,
        msk: &[u8; 64],
        session_id: &[u8],
        supplicant: [u8; 6],
        authenticator: [u8; 6],
    ) -> Result<Psk> {
        let (cak, ckn) = cak::derive(
            self.provider,
            msk,
            session_id,
            supplicant,
            authenticator,
            16,
        )
        .map_err(|e| anyhow::anyhow!("deriving the CAK from the MSK: {e}"))?;
        Psk::new(&cak, &ckn, "the CAK derived from EAP")
    }

    /// EAP failed or ended for the CA in force: the fallback CAK, else none.
    fn fall_back(&mut self, ctl: &SecyControl, why: &str) -> Result<()> {
        if self.chain.label() == Some(FALLBACK) {
            return Ok(());
        }
        match self.fallback.clone() {
            Some(f) => {
                let source = fallback_source(&self.fallback_file);
                self.chain.switch(&f, FALLBACK, &source, ctl)?;
                self.outcomes.fallback_switches += 1;
                ctl.shared().emit(
                    "cak_changed",
                    json!({"ca": FALLBACK, "ckn": hex::encode(f.ckn()), "why": why}),
                );
            }
            None => {
                if self.chain.label().is_some() {
                    self.chain.clear(ctl);
                    ctl.shared().emit("cak_removed", json!({"why": why}));
                }
            }
        }
        Ok(())
    }

    fn switch(&mut self, psk: &Psk, label: &str, ctl: &SecyControl) -> Result<()> {
        self.chain
            .switch(psk, label, &format!("802.1X {label}"), ctl)?;
        ctl.shared().emit(
            "cak_changed",
            json!({"ca": label, "ckn": hex::encode(psk.ckn())}),
        );
        Ok(())
    }

    fn failed(&mut self, ctl: &SecyControl, peer: Option<[u8; 6]>, reason: String) {
        self.outcomes.failures += 1;
        ctl.shared().emit(
            "eap_failure",
            json!({"peer": peer.map(mac_hex), "reason": reason}),
        );
        self.outcomes.last_failure = Some(reason);
    }

    fn supplicant_event(&mut self, ev: SupplicantEvent, ctl: &SecyControl) -> Result<()> {
        match ev {
            SupplicantEvent::Authenticated {
                authenticator,
                keys,
            } => {
                self.outcomes.successes += 1;
                let psk = self.derive(&keys.msk, &keys.session_id, self.own_mac, authenticator)?;
                ctl.shared().emit(
                    "eap_success",
                    json!({"peer": mac_hex(authenticator), "tls": format!("{:?}", keys.version),
                           "ckn": hex::encode(psk.ckn()), "msk_sha256": msk_fingerprint(&keys.msk)}),
                );
                let in_group = self.chain.label().is_some_and(|l| l.starts_with(GROUP));
                if in_group {
                    // Re-authenticated under a group CA: the new pairwise CA runs beside it
                    // and only carries the group CAK.
                    let mut p = participant(self.chain.params(), &psk, "802.1X pairwise")?;
                    p.start(ctl)?;
                    if let Pae::Supplicant { side, .. } = &mut self.pae {
                        *side = Some(Box::new(p));
                    }
                } else {
                    self.switch(&psk, &format!("eap:{}", mac_hex(authenticator)), ctl)?;
                }
            }
            SupplicantEvent::Failed {
                authenticator,
                reason,
            } => {
                self.failed(ctl, authenticator, reason.to_string());
                self.fall_back(ctl, &reason.to_string())?;
            }
            SupplicantEvent::LoggedOff => self.fall_back(ctl, "logoff")?,
            _ => {}
        }
        Ok(())
    }

    fn authenticator_event(&mut self, ev: AuthenticatorEvent, ctl: &SecyControl) -> Result<()> {
        let own = self.own_mac;
        match ev {
            AuthenticatorEvent::ToServer {
                supplicant,
                eap,
                identity,
            } => {
                if let Pae::Authenticator { radius, .. } = &mut self.pae {
                    radius.submit(
                        Instant::now(),
                        &AccessRequest {
                            supplicant,
                            authenticator: own,
                            identity: &identity,
                            eap: &eap,
                        },
                    )?;
                }
            }
            AuthenticatorEvent::Authenticated {
                supplicant,
                msk,
                session_id,
            } => {
                self.outcomes.successes += 1;
                let psk = self.derive(&msk, &session_id, supplicant, own)?;
                ctl.shared().emit(
                    "eap_success",
                    json!({"peer": mac_hex(supplicant), "ckn": hex::encode(psk.ckn())}),
                );
                let group = match &self.pae {
                    Pae::Authenticator { group, .. } => group.clone(),
                    Pae::Supplicant { .. } => None,
                };
                match group {
                    Some(g) => {
                        let mut p = participant(self.chain.params(), &psk, "802.1X pairwise")?;
                        p.distribute_only();
                        p.start(ctl)?;
                        p.distribute_cak(g.cak(), g.ckn())?;
                        if let Pae::Authenticator { sessions, .. } = &mut self.pae {
                            sessions.insert(
                                supplicant,
                                Session {
                                    ckn: psk.ckn().to_vec(),
                                    side: Some(p),
                                },
                            );
                        }
                        if !self.chain.label().is_some_and(|l| l.starts_with(GROUP)) {
                            self.switch(&g, GROUP, ctl)?;
                        }
                    }
                    None => {
                        if let Pae::Authenticator { sessions, .. } = &mut self.pae {
                            sessions.insert(
                                supplicant,
                                Session {
                                    ckn: psk.ckn().to_vec(),
                                    side: None,
                                },
                            );
                        }
                        self.switch(&psk, &format!("eap:{}", mac_hex(supplicant)), ctl)?;
                    }
                }
            }
            AuthenticatorEvent::Failed { supplicant, reason } => {
                let text = match (&reason, &self.pae) {
                    (AuthFailure::ServerUnreachable, Pae::Authenticator { radius_addr, .. }) => {
                        format!(
                            "RADIUS server {radius_addr} unreachable: no answer to any try; check \
                             that it runs and that --radius-secret is the secret of this client \
                             in its clients.conf (a RADIUS server drops a request under a wrong \
                             secret without an answer)"
                        )
                    }
                    _ => reason.to_string(),
                };
                self.failed(ctl, Some(supplicant), text.clone());
                self.session_gone(supplicant, &text, ctl)?;
            }
            AuthenticatorEvent::LoggedOff { supplicant } => {
                ctl.shared()
                    .emit("eap_logoff", json!({"peer": mac_hex(supplicant)}));
                self.session_gone(supplicant, "logoff", ctl)?
            }
            AuthenticatorEvent::SessionEnded { supplicant } => {
                self.session_gone(supplicant, "session ended", ctl)?
            }
            _ => {}
        }
        Ok(())
    }

    /// A supplicant's session ended: its CA goes; with none left, the fallback CAK.
    fn session_gone(&mut self, supplicant: [u8; 6], why: &str, ctl: &SecyControl) -> Result<()> {
        let (was, left) = match &mut self.pae {
            Pae::Authenticator {
                sessions, radius, ..
            } => {
                radius.forget(supplicant);
                let was = sessions.remove(&supplicant);
                (was, sessions.len())
            }
            Pae::Supplicant { .. } => return Ok(()),
        };
        let Some(mut was) = was else {
            return Ok(());
        };
        if let Some(p) = was.side.as_mut() {
            p.close();
        }
        let label = format!("eap:{}", mac_hex(supplicant));
        let ours = self.chain.label() == Some(label.as_str())
            && self.chain.ckn() == Some(was.ckn.as_slice());
        if ours || left == 0 {
            self.fall_back(ctl, why)?;
        }
        Ok(())
    }

    fn radius_answer(&mut self, supplicant: [u8; 6], a: RadiusAnswer) -> Option<ServerAnswer> {
        Some(match a {
            RadiusAnswer::Challenge { eap } => ServerAnswer::Challenge { eap },
            RadiusAnswer::Accept {
                eap, msk, key_name, ..
            } => match msk {
                Some(msk) => ServerAnswer::Accept {
                    eap,
                    msk,
                    session_id: key_name,
                },
                // An Access-Accept without keys cannot make a CAK: refused like a Reject.
                None => {
                    self.outcomes.last_failure = Some(format!(
                        "Access-Accept for {} without MS-MPPE keys",
                        mac_hex(supplicant)
                    ));
                    ServerAnswer::Reject { eap: None }
                }
            },
            RadiusAnswer::Reject { eap, .. } => ServerAnswer::Reject { eap },
            RadiusAnswer::Timeout { .. } => ServerAnswer::Unreachable,
            #[allow(unreachable_patterns)]
            _ => return None,
        })
    }

    /// Receives EAPOL frames, runs the PAE, RADIUS and the participants, sends what is due.
    fn step(&mut self, ctl: &SecyControl) -> Result<()> {
        let now = sys::monotonic_ns();
        for _ in 0..MAX_RX_PER_POLL {
            let Some(sock) = self.sock.as_ref() else {
                break;
            };
            let m = match sock.try_recv(&mut self.rxbuf) {
                Ok(Some(m)) => m,
                Ok(None) => break,
                Err(e) => return Err(anyhow::anyhow!("receiving EAPOL on {}: {e}", self.iface)),
            };
            let frame = &self.rxbuf[..m.len];
            if m.truncated() || eapol::packet_type(frame) == Some(eapol::packet_types::MKA) {
                continue;
            }
            // A dropped frame is counted by the PAE with its reason.
            let _ = match &mut self.pae {
                Pae::Supplicant { pae, .. } => pae.handle_frame(now, frame),
                Pae::Authenticator { pae, .. } => pae.handle_frame(now, frame),
            };
        }
        // RADIUS answers.
        let answers = match &mut self.pae {
            Pae::Authenticator { radius, .. } => radius.poll(Instant::now()),
            Pae::Supplicant { .. } => Vec::new(),
        };
        for (supplicant, a) in answers {
            if let Some(ans) = self.radius_answer(supplicant, a)
                && let Pae::Authenticator { pae, .. } = &mut self.pae
            {
                pae.server_answer(now, supplicant, ans);
            }
        }
        // Timers.
        match &mut self.pae {
            Pae::Supplicant { pae, .. } => {
                if pae.poll_timeout().is_some_and(|t| t <= now) {
                    pae.handle_timeout(now);
                }
            }
            Pae::Authenticator { pae, .. } => {
                if pae.poll_timeout().is_some_and(|t| t <= now) {
                    pae.handle_timeout(now);
                }
            }
        }
        // Events.
        loop {
            match &mut self.pae {
                Pae::Supplicant { pae, .. } => match pae.poll_event() {
                    Some(ev) => self.supplicant_event(ev, ctl)?,
                    None => break,
                },
                Pae::Authenticator { pae, .. } => match pae.poll_event() {
                    Some(ev) => self.authenticator_event(ev, ctl)?,
                    None => break,
                },
            }
        }
        self.transmit(now)?;
        self.poll_participants(ctl)
    }

    fn transmit(&mut self, now: u64) -> Result<()> {
        let Some(sock) = self.sock.as_ref() else {
            return Ok(());
        };
        loop {
            let n = match &mut self.pae {
                Pae::Supplicant { pae, .. } => pae.poll_transmit(now, &mut self.txbuf),
                Pae::Authenticator { pae, .. } => pae.poll_transmit(now, &mut self.txbuf),
            };
            let Some(n) = n else {
                return Ok(());
            };
            if let Err(e) = sock.send(&self.txbuf[..n])
                && matches!(
                    e.kind(),
                    std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::NotFound
                )
            {
                return Err(anyhow::anyhow!("sending EAPOL on {}: {e}", self.iface));
            }
        }
    }

    /// The chain, and the side participants; a Distributed CAK received switches to it.
    fn poll_participants(&mut self, ctl: &SecyControl) -> Result<()> {
        let now = Instant::now();
        let mut received = Vec::new();
        if let Some(p) = self.chain.current_mut()
            && let Some(g) = p.take_distributed_cak()
        {
            received.push(g);
        }
        match &mut self.pae {
            Pae::Supplicant { side, .. } => {
                if let Some(p) = side.as_mut() {
                    p.poll(now, ctl)?;
                    if let Some(g) = p.take_distributed_cak() {
                        received.push(g);
                    }
                }
            }
            Pae::Authenticator { sessions, .. } => {
                for s in sessions.values_mut() {
                    if let Some(p) = s.side.as_mut() {
                        p.poll(now, ctl)?;
                    }
                }
            }
        }
        for g in received {
            if self.chain.ckn() == Some(g.ckn()) {
                continue;
            }
            ctl.shared()
                .emit("cak_received", json!({"ckn": hex::encode(g.ckn())}));
            self.switch(&g, GROUP, ctl)?;
            if let Pae::Supplicant { side, .. } = &mut self.pae
                && let Some(mut p) = side.take()
            {
                p.close();
            }
        }
        for old in self.chain.poll(now, ctl)? {
            ctl.shared().emit("cak_retired", json!({"ca": old}));
        }
        Ok(())
    }
}

/// The first 16 hex digits of SHA-256 over the MSK: lets a test or an operator match the MSK
/// against the MS-MPPE keys a RADIUS server sent without the key itself leaving the process.
fn msk_fingerprint(msk: &[u8; 64]) -> String {
    use sha2::Digest;
    hex::encode(&sha2::Sha256::digest(msk)[..8])
}

fn fallback_source(f: &Option<PathBuf>) -> String {
    f.as_ref()
        .map(|f| f.display().to_string())
        .unwrap_or_default()
}

fn mac_hex(m: [u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// The RADIUS server's address (port 1812 when none is given).
fn resolve_radius(addr: &str) -> Result<SocketAddr> {
    let with_port = if addr.parse::<SocketAddr>().is_ok()
        || addr
            .rsplit_once(':')
            .is_some_and(|(h, p)| !h.ends_with(']') && !h.contains(':') && p.parse::<u16>().is_ok())
    {
        addr.to_string()
    } else {
        format!("{addr}:1812")
    };
    with_port
        .to_socket_addrs()
        .map_err(|e| usage(format!("--radius {addr}: {e}")))?
        .next()
        .ok_or_else(|| usage(format!("--radius {addr}: no address")))
}

impl KeySource for Dot1xKeys {
    fn kind(&self) -> &'static str {
        "802.1x"
    }

    fn start(&mut self, ctl: &SecyControl) -> Result<()> {
        let what = format!("EAPOL socket on --iface {}", self.iface);
        let sock =
            RawSocket::open(&self.iface, eapol::ETHERTYPE_EAPOL).map_err(|e| open_err(&what, e))?;
        sock.join_multicast(eapol::PAE_GROUP_ADDR.0)
            .with_context(|| format!("{what}: joining 01-80-C2-00-00-03"))?;
        sock.drop_other_host()
            .with_context(|| format!("{what}: filtering frames to other hosts"))?;
        let _ = sock.set_recv_buffer_force(1 << 20);
        self.sock = Some(sock);
        if let Pae::Authenticator { radius_addr, .. } = &self.pae {
            ctl.shared()
                .emit("radius_client", json!({"server": radius_addr.to_string()}));
        }
        ctl.shared().emit(
            "eap_started",
            json!({"role": self.role(), "fallback": self.fallback.is_some()}),
        );
        self.chain.start(ctl)?;
        self.step(ctl)
    }

    fn poll(&mut self, _now: Instant, ctl: &SecyControl) -> Result<()> {
        self.step(ctl)
    }

    fn wait(&mut self, max: Duration) {
        let now = sys::monotonic_ns();
        let due = match &self.pae {
            Pae::Supplicant { pae, .. } => pae.poll_timeout(),
            Pae::Authenticator { pae, .. } => pae.poll_timeout(),
        }
        .unwrap_or(u64::MAX);
        let mut t = Duration::from_nanos(due.saturating_sub(now))
            .min(max)
            .min(MAX_WAIT);
        if let Pae::Authenticator { radius, .. } = &self.pae
            && let Some(r) = radius.next_timeout()
        {
            t = t.min(r.saturating_duration_since(Instant::now()));
        }
        if t.is_zero() {
            return;
        }
        let Some(sock) = self.sock.as_ref() else {
            std::thread::sleep(t);
            return;
        };
        let mut entries = vec![PollEntry {
            fd: sock.as_fd(),
            read: true,
            write: false,
            ready: false,
        }];
        if let Pae::Authenticator { radius, .. } = &self.pae {
            entries.push(PollEntry {
                fd: radius.as_fd(),
                read: true,
                write: false,
                ready: false,
            });
        }
        if sys::poll_many(&mut entries, Some(t)).is_err() {
            std::thread::sleep(t);
        }
    }

    fn describe(&self, ctl: &SecyControl) -> Value {
        let mut v = self.chain.describe(ctl);
        let pae = match &self.pae {
            Pae::Supplicant { pae, side } => {
                let st = pae.status();
                json!({
                    "state": st.state.name(),
                    "authenticator": st.authenticator.map(mac_hex),
                    "authenticated": st.authenticated,
                    "last_failure": st.last_failure.map(|f| f.to_string()),
                    "drops": drops(pae.counters()),
                    "pairwise_beside_group": side.is_some(),
                })
            }
            Pae::Authenticator {
                pae,
                radius,
                radius_addr,
                group,
                sessions,
            } => {
                let c = radius.counters();
                json!({
                    "sessions": pae.sessions().iter().map(|s| json!({
                        "supplicant": mac_hex(s.supplicant),
                        "phase": s.phase.name(),
                        "authenticated": s.authenticated,
                        "identity": String::from_utf8_lossy(&s.identity),
                    })).collect::<Vec<_>>(),
                    "authenticated": sessions.keys().map(|m| mac_hex(*m)).collect::<Vec<_>>(),
                    "drops": drops(pae.counters()),
                    "radius": {
                        "server": radius_addr.to_string(),
                        "local": radius.local_addr().map(|a| a.to_string()),
                        "sent": c.sent, "retransmitted": c.retransmitted,
                        "timeouts": c.timeouts, "accepts": c.accepts, "rejects": c.rejects,
                        "challenges": c.challenges,
                        "drops": {
                            "malformed": c.malformed, "unknown_id": c.unknown_id,
                            "wrong_source": c.wrong_source,
                            "bad_response_authenticator": c.bad_response_authenticator,
                            "bad_message_authenticator": c.bad_message_authenticator,
                            "missing_message_authenticator": c.missing_message_authenticator,
                            "bad_mppe_key": c.bad_mppe_key,
                        },
                    },
                    "group_ckn": group.as_ref().map(|g| hex::encode(g.ckn())),
                })
            }
        };
        if let Some(o) = v.as_object_mut() {
            o.insert(
                "dot1x".into(),
                json!({
                    "role": self.role(),
                    "pae": pae,
                    "eap_successes": self.outcomes.successes,
                    "eap_failures": self.outcomes.failures,
                    "last_failure": self.outcomes.last_failure,
                    "fallback": self.fallback.as_ref().map(|f| hex::encode(f.ckn())),
                    "fallback_switches": self.outcomes.fallback_switches,
                }),
            );
        }
        v
    }
}

impl Drop for Dot1xKeys {
    /// A supplicant that stops says so: EAPOL-Logoff to its authenticator (802.1X-2020 8.x),
    /// which then ends its session at once instead of at the next failed re-authentication.
    fn drop(&mut self) {
        if let Pae::Supplicant { pae, .. } = &mut self.pae {
            let now = sys::monotonic_ns();
            pae.logoff(now);
            let _ = self.transmit(now);
        }
    }
}

impl Dot1xKeys {
    fn role(&self) -> &'static str {
        match self.pae {
            Pae::Supplicant { .. } => "supplicant",
            Pae::Authenticator { .. } => "authenticator",
        }
    }
}

fn drops(c: &pae::PaeCounters) -> Value {
    let m: serde_json::Map<String, Value> = c
        .named_drops()
        .map(|(k, v)| (k.to_string(), json!(v)))
        .collect();
    Value::Object(m)
}
