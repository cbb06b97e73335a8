//! The key lifecycle of a participant: key server election, SAK distribution and
//! acceptance, installation, the transmit switch and retirement (clause 9.8).

use alloc::vec;
use alloc::vec::Vec;

use zeroize::Zeroizing;

use super::{Cak, Event, MkaDrop, NEVER_KEY_SERVER, RekeyReason, SaInstall, Sak};
use super::{CakBody, Distribution, Key, Participant, Peer, assign_sscis, xpn_salt};
use crate::sa::macsec::CipherSuite;
use crate::wire::macsec::Sci;
use crate::wire::mkpdu::{DistributedCak, DistributedSak, KeyId, Mi, Repr};

impl Participant {
    /// Key server election (clause 9.5): among this participant and its live peers whose
    /// priority is not 0xFF, the lowest priority value, then the lowest SCI. No live peer: none.
    pub(super) fn elect(&mut self, now: u64) {
        let mut best: Option<(u8, Sci, Option<Mi>)> = None;
        if self.peers.iter().any(|p| p.live) {
            if self.cfg.key_server_priority != NEVER_KEY_SERVER {
                best = Some((self.cfg.key_server_priority, self.sci, None));
            }
            for p in self.peers.iter().filter(|p| p.live) {
                if p.priority == NEVER_KEY_SERVER {
                    continue;
                }
                if best.is_none_or(|(bp, bs, _)| (p.priority, p.sci) < (bp, bs)) {
                    best = Some((p.priority, p.sci, Some(p.mi)));
                }
            }
        }
        let new = best.map(|(_, s, m)| (s, m));
        if new != self.key_server {
            self.key_server = new;
            self.distributing = None;
            self.push_event(Event::KeyServerElected {
                sci: new.map(|(s, _)| s),
                is_self: new.is_some_and(|(_, m)| m.is_none()),
            });
            self.pending_tx = true;
            if new.is_none() {
                self.retire_all();
            }
            let _ = now;
        }
    }

    pub(super) fn is_key_server(&self) -> bool {
        self.key_server.is_some_and(|(_, m)| m.is_none())
    }

    pub(super) fn key_server_mi(&self) -> Option<Mi> {
        self.key_server.and_then(|(_, m)| m)
    }

    /// SSCIs for a key: this participant and its live peers (XPN suites only).
    pub(super) fn members(&self) -> Vec<(Sci, Option<u32>)> {
        let mut scis: Vec<Sci> = core::iter::once(self.sci)
            .chain(self.peers.iter().filter(|p| p.live).map(|p| p.sci))
            .collect();
        if self.cfg.suite.is_xpn() {
            assign_sscis(&mut scis)
                .into_iter()
                .map(|(s, i)| (s, Some(i)))
                .collect()
        } else {
            scis.sort_unstable();
            scis.into_iter().map(|s| (s, None)).collect()
        }
    }

    pub(super) fn own_ssci(key: &Key, sci: Sci) -> Option<u32> {
        key.members
            .iter()
            .find(|(s, _)| *s == sci)
            .and_then(|m| m.1)
    }

    pub(super) fn install(&self, key: &Key, tx: bool) -> SaInstall {
        let scs = if tx {
            vec![(self.sci, Self::own_ssci(key, self.sci))]
        } else {
            key.members
                .iter()
                .filter(|(s, _)| *s != self.sci)
                .copied()
                .collect()
        };
        SaInstall {
            key: key.id,
            an: key.an,
            suite: self.cfg.suite,
            sak: Sak(Zeroizing::new(key.sak.to_vec())),
            salt: key.salt,
            confidentiality_offset: key.confidentiality_offset,
            scs,
            lowest_pn: 1,
        }
    }

    /// A Distributed SAK from a live peer.
    pub(super) fn accept_sak(
        &mut self,
        now: u64,
        r: &Repr<'_>,
        d: DistributedSak<'_>,
    ) -> Result<(), MkaDrop> {
        if self.key_server_mi() != Some(r.basic.mi) || !r.basic.key_server {
            return Err(MkaDrop::SakNotFromKeyServer);
        }
        let Some(k) = d.key else {
            // "Plain text" distribution: MACsec without protection is not offered here.
            return Err(MkaDrop::BadSak);
        };
        let id = KeyId {
            mi: r.basic.mi,
            kn: k.kn,
        };
        if self.latest.as_ref().is_some_and(|l| l.id == id)
            || self.old.as_ref().is_some_and(|o| o.id == id)
        {
            return Ok(());
        }
        let suite = self.cfg.suite;
        let suite_ok = match k.cipher_suite {
            None => suite == CipherSuite::GcmAes128,
            Some(cs) => cs == suite.identifier(),
        };
        if !suite_ok || d.an > 3 {
            return Err(MkaDrop::BadSak);
        }
        let sak = match self.keys.unwrap_sak(k.wrapped) {
            Ok(s) if s.len() == suite.key_len() => s,
            _ => return Err(MkaDrop::BadSak),
        };
        let members = self.members();
        if suite.is_xpn() && r.basic.version >= 3 {
            let ks = members
                .iter()
                .find(|(s, _)| *s == r.basic.sci)
                .and_then(|m| m.1);
            if ks.map(|v| v as u8) != Some(r.key_server_ssci) {
                // Our view of the membership differs from the key server's: it sends the SAK
                // again with every MKPDU, so wait for the views to agree.
                self.counters.ssci_deferred += 1;
                return Ok(());
            }
        }
        let key = Key {
            id,
            an: d.an,
            sak,
            salt: suite.is_xpn().then(|| xpn_salt(&id)),
            confidentiality_offset: d.confidentiality_offset,
            members,
            peer_mis: Vec::new(),
            created: now,
            rx: true,
            tx: false,
            tx_pn: 1,
            tx_since: None,
        };
        self.set_latest(now, key);
        Ok(())
    }

    /// A Distributed CAK from a live peer: only the elected key server's is accepted. The body
    /// reads as a wrapped 128-bit CAK and, for 41 to 56 octets, also as a wrapped 256-bit one;
    /// the reading that passes the key wrap's integrity check is the CAK. A repeat of the last
    /// one accepted (the key server sends it in every MKPDU) is not announced again.
    pub(super) fn accept_cak(
        &mut self,
        r: &Repr<'_>,
        c: DistributedCak<'_>,
    ) -> Result<(), MkaDrop> {
        if self.key_server_mi() != Some(r.basic.mi) || !r.basic.key_server {
            return Err(MkaDrop::DcakNotFromKeyServer);
        }
        if self.cak_in.as_ref().is_some_and(|i| i.body == c.body) {
            return Ok(());
        }
        for (wrapped, ckn) in c.splits() {
            let Ok(cak) = self.keys.unwrap_sak(wrapped) else {
                continue;
            };
            if cak.len() != 16 && cak.len() != 32 {
                continue;
            }
            self.cak_in = Some(CakBody {
                body: c.body.to_vec(),
                wrapped_len: wrapped.len(),
            });
            self.push_event(Event::CakDistributed {
                cak: Cak(cak),
                ckn: ckn.to_vec(),
            });
            return Ok(());
        }
        Err(MkaDrop::DcakUnwrap)
    }

    /// Makes `key` the latest key (receive installed). The key this participant transmits
    /// with is never dropped here: a latest key in use (by us or, as a peer reports, by
    /// anyone) becomes the old key, else it is replaced and the old key stays.
    pub(super) fn set_latest(&mut self, now: u64, key: Key) {
        if let Some(prev) = self.latest.take() {
            let in_use = prev.tx
                || self
                    .peers
                    .iter()
                    .any(|p| p.live && p.reports(&prev.id, true));
            if in_use {
                let mut prev = prev;
                if !prev.tx {
                    prev.tx = true;
                    prev.tx_since = Some(now);
                    let ev = self.install(&prev, true);
                    self.push_event(Event::InstallTx(ev));
                }
                if let Some(o) = self.old.take() {
                    self.retire(o);
                }
                self.old = Some(prev);
            } else {
                self.retire(prev);
            }
        }
        self.retire_at = None;
        self.counters.saks_installed += 1;
        let ev = self.install(&key, false);
        self.push_event(Event::InstallRx(ev));
        self.latest = Some(key);
        self.pending_tx = true;
    }

    pub(super) fn retire(&mut self, k: Key) {
        if k.tx {
            self.push_event(Event::RetireTx {
                key: k.id,
                an: k.an,
            });
        }
        if k.rx {
            self.push_event(Event::RetireRx {
                key: k.id,
                an: k.an,
            });
        }
        self.counters.saks_retired += 1;
    }

    pub(super) fn retire_all(&mut self) {
        if let Some(o) = self.old.take() {
            self.retire(o);
        }
        if let Some(l) = self.latest.take() {
            self.retire(l);
        }
        self.distributing = None;
        self.retire_at = None;
    }

    /// The key server generates and distributes a SAK (clause 9.8).
    pub(super) fn distribute(&mut self, now: u64, reason: RekeyReason) {
        if !self.cfg.distribute_sak {
            return;
        }
        let suite = self.cfg.suite;
        let mut nonce = Zeroizing::new(vec![0u8; suite.key_len()]);
        if self.rng.fill(&mut nonce).is_err() {
            return;
        }
        let kn = self.next_kn;
        let peer_mis: Vec<Mi> = self.peers.iter().filter(|p| p.live).map(|p| p.mi).collect();
        let mut mis = vec![self.mi];
        mis.extend_from_slice(&peer_mis);
        let Ok(sak) = self.keys.derive_sak(&nonce, &mis, kn, suite.key_len()) else {
            return;
        };
        let Ok(wrapped) = self.keys.wrap_sak(&sak) else {
            return;
        };
        self.next_kn = kn.wrapping_add(1).max(1);
        let used = [
            self.latest.as_ref().filter(|l| l.tx).map(|l| l.an),
            self.old.as_ref().map(|o| o.an),
        ];
        let prev = self
            .latest
            .as_ref()
            .map_or((self.first_an + 3) % 4, |l| l.an);
        let an = (1..=4)
            .map(|i| (prev + i) % 4)
            .find(|a| !used.contains(&Some(*a)))
            .unwrap_or((prev + 1) % 4);
        let id = KeyId { mi: self.mi, kn };
        let key = Key {
            id,
            an,
            sak,
            salt: suite.is_xpn().then(|| xpn_salt(&id)),
            confidentiality_offset: self.cfg.confidentiality_offset,
            members: self.members(),
            peer_mis,
            created: now,
            rx: true,
            tx: false,
            tx_pn: 1,
            tx_since: None,
        };
        self.counters.saks_distributed += 1;
        self.push_event(Event::SakDistributed {
            key: id,
            an,
            reason,
        });
        self.distributing = Some(Distribution {
            wrapped,
            key: id,
            an,
        });
        self.set_latest(now, key);
    }

    /// What follows from the current state: key server duties, transmit switch, retirement —
    /// repeated while a step changes the keys (a switch or a retirement can make a rekey due).
    pub(super) fn progress(&mut self, now: u64) {
        let state = |p: &Participant| {
            (
                p.latest.as_ref().map(|l| (l.id, l.tx)),
                p.old.as_ref().map(|o| o.id),
            )
        };
        // Each round either changes nothing or moves a key a step on; a handful is plenty.
        for _ in 0..4 {
            let before = state(self);
            self.progress_once(now);
            if state(self) == before {
                break;
            }
        }
    }

    pub(super) fn progress_once(&mut self, now: u64) {
        let live: Vec<&Peer> = self.peers.iter().filter(|p| p.live).collect();
        if live.is_empty() {
            return;
        }
        drop(live);
        // Retire first: a retirement may let the next rekey start.
        self.check_retire(now);
        let live: Vec<&Peer> = self.peers.iter().filter(|p| p.live).collect();
        if self.is_key_server() {
            let ours = self.latest.as_ref().filter(|l| l.id.mi == self.mi);
            let reason = match ours {
                None => Some(RekeyReason::Elected),
                Some(l) => {
                    let joined = live.iter().any(|p| !l.peer_mis.contains(&p.mi));
                    let left = l.peer_mis.iter().any(|m| !live.iter().any(|p| &p.mi == m));
                    let change = joined
                        && (self.cfg.rekey_on_peer_change || self.cfg.suite.is_xpn())
                        || left && self.cfg.rekey_on_peer_change;
                    let pn = live
                        .iter()
                        .filter_map(|p| p.latest_pn_for(&l.id))
                        .chain(core::iter::once(l.tx_pn))
                        .max()
                        .unwrap_or(0);
                    if !l.tx && joined {
                        // Still distributing and a member joined: redistribute to all.
                        Some(RekeyReason::PeerChange)
                    } else if !l.tx || self.old.is_some() {
                        // One rekey at a time: the previous one completes first.
                        None
                    } else if change {
                        Some(RekeyReason::PeerChange)
                    } else if pn >= self.cfg.pn_threshold() {
                        Some(RekeyReason::PnThreshold)
                    } else if self
                        .cfg
                        .rekey_interval_ns
                        .is_some_and(|i| now >= l.created.saturating_add(i))
                    {
                        Some(RekeyReason::Timer)
                    } else {
                        None
                    }
                }
            };
            if let Some(reason) = reason {
                self.distribute(now, reason);
            }
        }
        self.switch_tx(now);
        self.check_retire(now);
    }

    /// Starts transmitting with the latest key: the key server once every live peer receives
    /// with it, the others once the key server transmits with it.
    pub(super) fn switch_tx(&mut self, now: u64) {
        let Some(l) = self.latest.as_ref() else {
            return;
        };
        if l.tx || !l.rx {
            return;
        }
        let id = l.id;
        let ready = if self.is_key_server() {
            let all = self
                .peers
                .iter()
                .filter(|p| p.live)
                .all(|p| p.reports(&id, false));
            if all {
                self.distributing = None;
            }
            all
        } else {
            let ks = self.key_server_mi();
            self.peers
                .iter()
                .any(|p| p.live && Some(p.mi) == ks && p.reports(&id, true))
        };
        if !ready {
            return;
        }
        let mut old_tx = None;
        if let Some(o) = self.old.as_mut().filter(|o| o.tx) {
            o.tx = false;
            old_tx = Some((o.id, o.an));
        }
        if let Some(l) = self.latest.as_mut() {
            l.tx = true;
            l.tx_since = Some(now);
            l.tx_pn = 1;
        }
        if let Some(ev) = self.latest.as_ref().map(|l| self.install(l, true)) {
            self.push_event(Event::InstallTx(ev));
        }
        if let Some((key, an)) = old_tx {
            self.push_event(Event::RetireTx { key, an });
        }
        self.pending_tx = true;
    }

    /// Retires the old key once every live peer transmits with the latest (after the SAK
    /// retire time), or at the latest a life time plus the retire time after our own switch.
    pub(super) fn check_retire(&mut self, now: u64) {
        let (Some(o), Some(l)) = (self.old.as_ref(), self.latest.as_ref()) else {
            self.retire_at = None;
            return;
        };
        let _ = o;
        let Some(since) = l.tx_since else {
            return;
        };
        let id = l.id;
        if self.retire_at.is_none()
            && self
                .peers
                .iter()
                .filter(|p| p.live)
                .all(|p| p.reports(&id, true))
        {
            self.retire_at = Some(now.saturating_add(self.cfg.sak_retire_ns));
        }
        let forced = since
            .saturating_add(self.cfg.life_ns)
            .saturating_add(self.cfg.sak_retire_ns);
        if self.retire_at.is_some_and(|t| now >= t) || now >= forced {
            if let Some(o) = self.old.take() {
                self.retire(o);
            }
            self.retire_at = None;
            self.pending_tx = true;
        }
    }
}
