//! The MKA classes of `ivnsec attack --mka` (docs/attacks.md, "MKA"): two members of one CA run
//! `ivnsec macsec up --psk` on the testbed and ping each other through their TAPs while the
//! attacker, a third ECU on the same switch, injects MKPDUs (EAPOL-MKA, EtherType 0x888E, to
//! the group address 01-80-C2-00-00-03 every member listens to):
//!
//! - [`MkaAttack::BadIcv`]: a captured MKPDU of a member rewritten to make the attacker's
//!   choice win — key server priority 0, the key server bit, a Distributed SAK, a fresh MN —
//!   with an ICV the attacker cannot compute (it has no CAK). Dropped as `bad_icv`.
//! - [`MkaAttack::StaleMn`]: captured MKPDUs of the members sent again unchanged (a valid ICV,
//!   an MN already seen). Dropped as `stale_mn` (and `own_pdu` at the member that sent it).
//! - [`MkaAttack::ForeignCkn`]: MKPDUs of another CA (the attacker's own CAK and CKN, a valid
//!   ICV under them) claiming to be key server with a SAK. Dropped as `unknown_ckn`.
//! - [`MkaAttack::SakNotFromKeyServer`]: an insider — a device that holds the CA's CAK (a
//!   compromised ECU) but does not win the election (priority 255) — distributes its own SAKs.
//!   It may become a live peer (it is a member), but its SAKs are dropped as
//!   `sak_not_from_key_server`.
//!
//! The verdict is read from the members' status (MKA drop counters) and events files: 0
//! accepted means no forged SAK installed, no peer made live (but the insider), no key server
//! change; and the legitimate ping across the TAPs loses nothing.
//!
//! This module: the classes, the attacker's spec, the forging (no I/O) and the attacker node
//! (`ivnsec node mka-attack`); [`super::mka_run`] orchestrates.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use ivnsec_core::channel::DirectionKeys;
use ivnsec_core::mka::kdf::CaKeys;
use ivnsec_core::profile::Profile;
use ivnsec_core::sa::macsec::CipherSuite;
use ivnsec_core::wire::ethernet::MacAddr;
use ivnsec_core::wire::macsec::Sci;
use ivnsec_core::wire::mkpdu::{
    self, ALGORITHM_AGILITY, BasicParamSet, DistributedKey, DistributedSak, Frame, KeyId,
    MKA_VERSION, Mi, PAE_GROUP_ADDR, PeerEntry, PeerList, Repr, SakUse, SakUseKeys,
};
use ivnsec_crypto::ProviderChoice;
use ivnsec_net::sys::RawSocket;
use serde::{Deserialize, Serialize};

use crate::process::{NodeSpec, read_spec};

/// The MKA attack classes, in the order `ivnsec attack --mka` runs them (the insider last: it
/// becomes a live peer, and the members need a life time to forget it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum MkaAttack {
    /// A member's MKPDU altered to win the election and carry a SAK, with a wrong ICV.
    BadIcv,
    /// Captured MKPDUs of the members replayed (an MN already seen).
    StaleMn,
    /// MKPDUs of another CA (a valid ICV under a CAK the members do not have).
    ForeignCkn,
    /// A CA member that is not the key server distributes SAKs.
    SakNotFromKeyServer,
}

impl MkaAttack {
    pub const ALL: [MkaAttack; 4] = [
        MkaAttack::BadIcv,
        MkaAttack::StaleMn,
        MkaAttack::ForeignCkn,
        MkaAttack::SakNotFromKeyServer,
    ];

    /// The stable name used in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            MkaAttack::BadIcv => "mka-bad-icv",
            MkaAttack::StaleMn => "mka-stale-mn",
            MkaAttack::ForeignCkn => "mka-foreign-ckn",
            MkaAttack::SakNotFromKeyServer => "mka-sak-not-key-server",
        }
    }

    /// The drop reasons (names of `ivnsec_core::mka::MkaDrop`) that judge this class's
    /// MKPDUs at the members.
    pub fn judged_by(self) -> &'static [&'static str] {
        match self {
            MkaAttack::BadIcv => &["bad_icv"],
            MkaAttack::StaleMn => &["stale_mn", "own_pdu"],
            MkaAttack::ForeignCkn => &["unknown_ckn"],
            MkaAttack::SakNotFromKeyServer => &["sak_not_from_key_server"],
        }
    }

    /// Whether the attacker holds the CA's CAK (and so may become a live peer).
    pub fn insider(self) -> bool {
        self == MkaAttack::SakNotFromKeyServer
    }
}

/// What the members' state says about one class (the MKA part of an
/// [`AttackResult`](super::AttackResult)).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct MkaAccount {
    /// Peers the members made live with an MI the attacker used (not counted for the insider,
    /// which is a member).
    pub peers_made_live: u64,
    /// SAKs the members installed whose key server MI is one the attacker used.
    pub forged_saks_installed: u64,
    /// Key server elections at the members while the attacker was at work.
    pub key_server_changes: u64,
    /// The key server (SCI) before and after the class, as each member sees it.
    pub key_server_before: Vec<Option<String>>,
    pub key_server_after: Vec<Option<String>>,
    /// RTT of the legitimate ping across the TAPs (µs): median and maximum.
    pub ping_rtt_p50_us: Option<f64>,
    pub ping_rtt_max_us: Option<f64>,
}

/// Everything the MKA attacker process needs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MkaAttackSpec {
    pub attack: MkaAttack,
    pub profile: Profile,
    pub provider: ProviderChoice,
    /// MKPDUs to inject.
    pub count: u64,
    /// The attacker's interface and MAC.
    pub ifname: String,
    pub attacker_mac: [u8; 6],
    /// The members' MACs: the attacker listens until it captured an MKPDU of each.
    pub members: Vec<[u8; 6]>,
    /// The CA's CKN (not secret: every MKPDU carries it).
    pub ckn: Vec<u8>,
    /// The CA's CAK, for the insider only (empty otherwise); over the pipe, not in the JSON.
    #[serde(skip)]
    pub cak: DirectionKeys,
}

impl NodeSpec for MkaAttackSpec {
    fn keys(&self) -> Vec<&DirectionKeys> {
        vec![&self.cak]
    }
    fn keys_mut(&mut self) -> Vec<&mut DirectionKeys> {
        vec![&mut self.cak]
    }
}

/// The latest MKPDU the attacker captured from one member.
#[derive(Clone, Debug)]
pub struct Captured {
    pub sci: Sci,
    pub mi: Mi,
    pub mn: u32,
    pub frame: Vec<u8>,
}

/// Keeps the latest MKPDU of each sender (by SCI; at most 64 senders). Parsing only: the
/// attacker cannot verify the ICV, and needs none of that to copy MIs and MNs.
#[derive(Debug, Default)]
pub struct Capture {
    pub by_sci: BTreeMap<u64, Captured>,
}

impl Capture {
    /// Takes one received frame; `false` when it is not an MKPDU.
    pub fn push(&mut self, frame: &[u8]) -> bool {
        let Ok(f) = Frame::new_checked(frame) else {
            return false;
        };
        let Ok(r) = Repr::parse(&f) else {
            return false;
        };
        let key = r.basic.sci.to_u64();
        if self.by_sci.len() >= 64 && !self.by_sci.contains_key(&key) {
            return false;
        }
        self.by_sci.insert(
            key,
            Captured {
                sci: r.basic.sci,
                mi: r.basic.mi,
                mn: r.basic.mn,
                frame: frame.to_vec(),
            },
        );
        true
    }

    /// The captured members among `macs`, in that order (`None` until each has been seen).
    pub fn members(&self, macs: &[[u8; 6]]) -> Option<Vec<&Captured>> {
        macs.iter()
            .map(|m| self.by_sci.get(&Sci::end_station(MacAddr(*m)).to_u64()))
            .collect()
    }
}

/// Forges the MKPDUs of one class (no I/O; randomness from the portable provider).
pub struct MkaForger {
    attack: MkaAttack,
    suite: CipherSuite,
    attacker_mac: MacAddr,
    /// The attacker's own MI and next MN (foreign CKN, insider).
    mi: Mi,
    mn: u32,
    /// The keys the attacker signs with: a CA of its own (foreign CKN), the CA's (insider),
    /// or a random CA whose ICV the members reject (bad ICV).
    keys: CaKeys,
    ckn: Vec<u8>,
}

fn random(buf: &mut [u8]) -> Result<()> {
    ivnsec_crypto::PORTABLE
        .rng
        .fill(buf)
        .map_err(|e| anyhow!("random generator: {e}"))
}

impl MkaForger {
    /// `cak` is the CA's CAK (the insider's; ignored by the other classes, which sign with a
    /// random CAK of their own), `ckn` the CA's CKN.
    pub fn new(
        attack: MkaAttack,
        suite: CipherSuite,
        attacker_mac: [u8; 6],
        cak: &[u8],
        ckn: &[u8],
    ) -> Result<MkaForger> {
        let provider = ivnsec_crypto::PORTABLE;
        let mut mi = [0u8; 12];
        random(&mut mi)?;
        let (keys, ckn) = if attack.insider() {
            let k = CaKeys::new(provider, cak, ckn).map_err(|e| anyhow!("the CA's CAK: {e}"))?;
            (k, ckn.to_vec())
        } else {
            let mut own = [0u8; 16];
            random(&mut own)?;
            let k = CaKeys::new(provider, &own, ckn).map_err(|e| anyhow!("{e}"))?;
            let ckn = if attack == MkaAttack::ForeignCkn {
                let mut c = vec![0u8; 16];
                random(&mut c)?;
                c
            } else {
                ckn.to_vec()
            };
            let k = if attack == MkaAttack::ForeignCkn {
                CaKeys::new(provider, &own, &ckn).map_err(|e| anyhow!("{e}"))?
            } else {
                k
            };
            (k, ckn)
        };
        Ok(MkaForger {
            attack,
            suite,
            attacker_mac: MacAddr(attacker_mac),
            mi,
            mn: 1,
            keys,
            ckn,
        })
    }

    /// The MI the attacker sends under (foreign CKN, insider).
    pub fn mi(&self) -> Mi {
        self.mi
    }

    /// Forges MKPDU number `i` of the class from what was captured of the members into `out`.
    /// Replays copy a captured frame as it is; every other MKPDU comes from the attacker's own
    /// address.
    pub fn forge(&mut self, members: &[&Captured], i: u64, out: &mut Vec<u8>) -> Result<()> {
        let Some(&victim) = members.get(i as usize % members.len().max(1)) else {
            bail!("no member captured");
        };
        out.clear();
        if self.attack == MkaAttack::StaleMn {
            out.extend_from_slice(&victim.frame);
            return Ok(());
        }
        let live: Vec<PeerEntry> = members
            .iter()
            .map(|c| PeerEntry { mi: c.mi, mn: c.mn })
            .collect();
        let mut sak = vec![0u8; self.suite.key_len()];
        random(&mut sak)?;
        let wrapped = self.keys.wrap_sak(&sak).map_err(|e| anyhow!("{e}"))?;
        let kn = (i as u32).wrapping_add(1).max(1);
        let (sci, mi, mn, priority) = match self.attack {
            // The victim's own identity with an MN it has not used yet, made to win.
            MkaAttack::BadIcv => (
                victim.sci,
                victim.mi,
                victim.mn.saturating_add(1000 + i as u32),
                0,
            ),
            MkaAttack::ForeignCkn => (Sci::end_station(self.attacker_mac), self.mi, self.mn, 0),
            // A member that never wins the election (priority 255) yet sends SAKs.
            _ => (Sci::end_station(self.attacker_mac), self.mi, self.mn, 0xFF),
        };
        let key_mi = if self.attack == MkaAttack::BadIcv {
            victim.mi
        } else {
            self.mi
        };
        let an = (i % 4) as u8;
        let repr = Repr {
            basic: BasicParamSet {
                version: MKA_VERSION,
                key_server_priority: priority,
                key_server: true,
                macsec_desired: true,
                macsec_capability: 2,
                sci,
                mi,
                mn,
                algorithm_agility: ALGORITHM_AGILITY,
                ckn: &self.ckn,
            },
            live_peers: Some(PeerList::Entries(&live)),
            key_server_ssci: 0,
            potential_peers: None,
            sak_use: Some(SakUse {
                latest_an: an,
                latest_tx: true,
                latest_rx: true,
                keys: Some(SakUseKeys {
                    latest: KeyId { mi: key_mi, kn },
                    latest_lowest_pn: 1,
                    ..SakUseKeys::default()
                }),
                ..SakUse::default()
            }),
            distributed_sak: Some(DistributedSak {
                an,
                confidentiality_offset: 1,
                key: Some(DistributedKey {
                    kn,
                    cipher_suite: (self.suite != CipherSuite::GcmAes128)
                        .then(|| self.suite.identifier()),
                    wrapped: &wrapped,
                }),
            }),
            distributed_cak: None,
            xpn: None,
            icv_indicator: false,
            skipped: 0,
        };
        out.resize(repr.buffer_len(), 0);
        let n = repr
            .emit(PAE_GROUP_ADDR, self.attacker_mac, out)
            .map_err(|e| anyhow!("forging an MKPDU: {e}"))?;
        out.truncate(n);
        let signed = n - mkpdu::ICV_LEN;
        let icv = self.keys.icv(&out[..signed]);
        out[signed..].copy_from_slice(&icv);
        self.mn = self.mn.wrapping_add(1).max(1);
        Ok(())
    }
}

/// How long the attacker listens for the members' MKPDUs before it gives up (a hello time is
/// 2 s by default).
const LISTEN: Duration = Duration::from_secs(8);
/// One MKPDU every this long (2000 per second): the members judge each one.
const PACE: Duration = Duration::from_micros(500);

/// The attacker node (`ivnsec node mka-attack`): its spec arrives on stdin
/// ([`crate::process`]); it captures the members' MKPDUs, then injects `count` of its class
/// and prints `INJECTED <n>`, `MI <hex>`, `SECONDS <s>` and `END`.
pub fn node() -> Result<()> {
    let spec: MkaAttackSpec = read_spec()?;
    let Profile::Macsec(profile) = spec.profile else {
        bail!(
            "the MKA attacks need a MACsec profile, not {}",
            spec.profile
        );
    };
    let sock = RawSocket::open(&spec.ifname, mkpdu::ETHERTYPE_EAPOL)
        .with_context(|| format!("opening an EAPOL socket on {}", spec.ifname))?;
    sock.join_multicast(PAE_GROUP_ADDR.0)
        .context("joining 01-80-C2-00-00-03")?;
    let mut forger = MkaForger::new(
        spec.attack,
        profile.suite,
        spec.attacker_mac,
        spec.cak.key(),
        &spec.ckn,
    )?;
    let mut capture = Capture::default();
    let mut rx = vec![0u8; 4096];
    let take = |capture: &mut Capture, rx: &mut Vec<u8>| -> Result<()> {
        while let Some(m) = sock.try_recv(rx)? {
            if !m.truncated() {
                capture.push(&rx[..m.len]);
            }
        }
        Ok(())
    };
    let t0 = Instant::now();
    while capture.members(&spec.members).is_none() {
        if t0.elapsed() > LISTEN {
            bail!(
                "captured MKPDUs of {} of the {} members in {LISTEN:?}: the switch must forward \
                 01-80-C2-00-00-03 (group_fwd_mask 8) and the members must run",
                spec.members
                    .iter()
                    .filter(|m| capture
                        .by_sci
                        .contains_key(&Sci::end_station(MacAddr(**m)).to_u64()))
                    .count(),
                spec.members.len()
            );
        }
        ivnsec_net::sys::wait_readable(sock.as_fd(), Some(Duration::from_millis(20)))?;
        take(&mut capture, &mut rx)?;
    }
    let started = Instant::now();
    let mut frame = Vec::with_capacity(2048);
    let mut injected = 0u64;
    while injected < spec.count {
        take(&mut capture, &mut rx)?;
        let Some(members) = capture.members(&spec.members) else {
            bail!("lost the members' MKPDUs");
        };
        forger.forge(&members, injected, &mut frame)?;
        sock.send(&frame).context("injecting an MKPDU")?;
        injected += 1;
        std::thread::sleep(PACE);
    }
    let seconds = started.elapsed().as_secs_f64();
    let out = std::io::stdout();
    let mut out = out.lock();
    writeln!(out, "INJECTED {injected}")?;
    writeln!(out, "MI {}", hex::encode(forger.mi()))?;
    writeln!(out, "SECONDS {seconds:.6}")?;
    writeln!(out, "END")?;
    out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ivnsec_core::mka::{Config, Participant};

    const CAK: [u8; 16] = [0x5a; 16];
    const CKN: &[u8] = b"attack-ckn";

    fn member(last: u8) -> Participant {
        let sci = Sci::end_station(MacAddr([2, 0, 0, 0, 0, last]));
        Participant::new(
            Config::new(CipherSuite::GcmAes128),
            &CAK,
            CKN,
            sci,
            ivnsec_crypto::PORTABLE,
            ivnsec_crypto::PORTABLE.rng,
            0,
        )
        .unwrap()
    }

    /// Two members that made each other live (a few exchanges on a virtual clock); returns
    /// them and the latest frame of each.
    fn pair() -> (Participant, Participant, Vec<u8>, Vec<u8>) {
        let (mut a, mut b) = (member(1), member(2));
        let mut buf = vec![0u8; 2048];
        let (mut fa, mut fb) = (Vec::new(), Vec::new());
        for t in 0..6u64 {
            let now = t * 10_000_000;
            while let Some(n) = a.poll_transmit(now, &mut buf) {
                fa = buf[..n].to_vec();
                let _ = b.handle_pdu(now, &fa);
            }
            while let Some(n) = b.poll_transmit(now, &mut buf) {
                fb = buf[..n].to_vec();
                let _ = a.handle_pdu(now, &fb);
            }
            a.handle_timeout(now);
            b.handle_timeout(now);
        }
        assert!(a.snapshot().peers.iter().all(|p| p.live));
        (a, b, fa, fb)
    }

    /// Each class's forgery, handed to a real participant of the CA, is dropped for the reason
    /// the class is judged by, and changes neither the key server nor the installed SAK.
    #[test]
    fn every_forgery_is_dropped_for_its_reason() {
        for attack in MkaAttack::ALL {
            let (mut a, _b, fa, fb) = pair();
            let mut cap = Capture::default();
            assert!(cap.push(&fa) && cap.push(&fb));
            assert!(!cap.push(b"not an mkpdu"));
            let macs = [[2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]];
            let members = cap.members(&macs).unwrap();
            let before = a.snapshot();
            let mut f = MkaForger::new(
                attack,
                CipherSuite::GcmAes128,
                [2, 0, 0, 0, 0, 9],
                &CAK,
                CKN,
            )
            .unwrap();
            let mut out = Vec::new();
            let now = 70_000_000;
            for i in 0..6 {
                f.forge(&members, i, &mut out).unwrap();
                let got = a.handle_pdu(now, &out).unwrap_err();
                assert!(
                    attack.judged_by().contains(&got.name()),
                    "{attack:?}: {got}"
                );
            }
            let after = a.snapshot();
            assert_eq!(after.key_server, before.key_server, "{attack:?}");
            // The key server may rekey when the insider joins; no key is ever the attacker's.
            for k in [after.latest, after.old].into_iter().flatten() {
                assert_ne!(k.key.mi, f.mi(), "{attack:?}");
                assert_eq!(Some(k.key.mi), before.latest.map(|l| l.key.mi));
            }
            let theirs = |s: &ivnsec_core::mka::Status| {
                s.peers.iter().filter(|p| p.live && p.mi == f.mi()).count()
            };
            assert_eq!(theirs(&after), usize::from(attack.insider()), "{attack:?}");
            let drops: u64 = after
                .counters
                .named_drops()
                .filter(|(n, _)| attack.judged_by().contains(n))
                .map(|(_, v)| v)
                .sum();
            assert_eq!(drops, 6, "{attack:?}");
        }
    }
}
