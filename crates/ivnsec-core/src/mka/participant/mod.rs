//! The MKA participant: one member of one CA (IEEE Std 802.1X-2020 clause 9), sans-I/O.
//!
//! See the [module documentation](super) for the API contract and the state machine.

use alloc::boxed::Box;
use alloc::collections::VecDeque;
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;
use core::fmt;
use core::hash::{Hash, Hasher};

use zeroize::Zeroizing;

use super::kdf::{CaKeys, KeyError, SecretBytes};
use crate::crypto::{CryptoProvider, SecureRandom};
use crate::sa::macsec::CipherSuite;
use crate::wire::ethernet::MacAddr;
use crate::wire::macsec::Sci;
use crate::wire::mkpdu::{
    self, ALGORITHM_AGILITY, BasicParamSet, DistributedCak, DistributedKey, DistributedSak, Frame,
    KeyId, MAX_CKN_LEN, MKA_VERSION, Mi, PeerEntry, PeerList, Repr, SakUse, SakUseKeys, XpnParams,
};

/// Sent MNs remembered for the freshness check.
const MN_HISTORY: usize = 64;

/// A start-up ramp-up: the first `count` MKPDUs go out after `first_ns`, 2·`first_ns`,
mod keys;
mod types;

pub use types::*;

#[derive(Clone)]
struct Peer {
    mi: Mi,
    mn: u32,
    sci: Sci,
    priority: u8,
    key_server: bool,
    live: bool,
    expires: u64,
    version: u8,
    sak_use: Option<SakUse>,
    /// High 32 bits of the reported lowest acceptable PNs (XPN set).
    xpn: Option<XpnParams>,
}

impl Peer {
    /// The full 64-bit lowest PN this peer reports for `key` as its latest key.
    fn latest_pn_for(&self, key: &KeyId) -> Option<u64> {
        let s = self.sak_use?;
        let k = s.keys?;
        (k.latest == *key).then(|| {
            let high = self.xpn.map_or(0, |x| x.latest_lowest_pn_high);
            (u64::from(high) << 32) | u64::from(k.latest_lowest_pn)
        })
    }

    fn reports(&self, key: &KeyId, tx: bool) -> bool {
        self.sak_use.is_some_and(|s| {
            s.keys.is_some_and(|k| k.latest == *key) && if tx { s.latest_tx } else { s.latest_rx }
        })
    }
}

#[derive(Clone)]
struct Key {
    id: KeyId,
    an: u8,
    sak: SecretBytes,
    salt: Option<[u8; 12]>,
    confidentiality_offset: u8,
    /// Every member's SCI and SSCI (XPN) as assigned at distribution, this participant included.
    members: Vec<(Sci, Option<u32>)>,
    /// MIs of the key server's live peers at distribution (key server only: join detection).
    peer_mis: Vec<Mi>,
    created: u64,
    rx: bool,
    tx: bool,
    tx_pn: u64,
    tx_since: Option<u64>,
}

impl Key {
    fn status(&self) -> KeyStatus {
        KeyStatus {
            key: self.id,
            an: self.an,
            rx: self.rx,
            tx: self.tx,
            tx_pn: self.tx_pn,
        }
    }
}

/// The key server's distribution in progress.
#[derive(Clone)]
struct Distribution {
    wrapped: Vec<u8>,
    key: KeyId,
    an: u8,
}

/// A Distributed CAK parameter set body, as on the wire: the AES Key Wrap of the CAK under this
/// CA's KEK followed by the CKN. Never the CAK's bytes.
#[derive(Clone, PartialEq, Eq, Hash)]
struct CakBody {
    body: Vec<u8>,
    wrapped_len: usize,
}

impl CakBody {
    fn ckn(&self) -> Vec<u8> {
        self.body
            .get(self.wrapped_len..)
            .unwrap_or_default()
            .to_vec()
    }
}

/// One MKA participant (see the module documentation).
pub struct Participant {
    cfg: Config,
    /// The CA's keys, fixed at creation (shared by [`Participant::fork`]s).
    keys: Arc<CaKeys>,
    ckn: Vec<u8>,
    sci: Sci,
    src: MacAddr,
    rng: Box<dyn SecureRandom>,
    mi: Mi,
    mn: u32,
    /// (MN, time sent) of recent MKPDUs, oldest first.
    sent: VecDeque<(u32, u64)>,
    peers: Vec<Peer>,
    key_server: Option<(Sci, Option<Mi>)>,
    latest: Option<Key>,
    old: Option<Key>,
    next_kn: u32,
    /// The AN of the first SAK this participant distributes as key server
    /// ([`Participant::prefer_first_an`]; 0 by default).
    first_an: u8,
    distributing: Option<Distribution>,
    /// The CAK to distribute while this participant is the key server.
    cak_out: Option<CakBody>,
    /// The last Distributed CAK accepted from the key server.
    cak_in: Option<CakBody>,
    retire_at: Option<u64>,
    next_hello: u64,
    ramp_sent: u32,
    pending_tx: bool,
    events: VecDeque<Event>,
    counters: Counters,
}

impl fmt::Debug for Participant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Participant")
            .field("sci", &self.sci)
            .field("mn", &self.mn)
            .field("peers", &self.peers.len())
            .finish_non_exhaustive()
    }
}

fn rand_mi(rng: &dyn SecureRandom) -> Result<Mi, KeyError> {
    let mut mi = [0u8; 12];
    rng.fill(&mut mi)?;
    Ok(mi)
}

/// XPN salt (clause 9.8.2, as wpa_supplicant and MKAdaemon compute it): the key server's MI
/// with the KN's two 16-bit halves XORed into its first four octets, low half first.
pub fn xpn_salt(key: &KeyId) -> [u8; 12] {
    let mut s = key.mi;
    let kn = key.kn.to_be_bytes();
    s[0] ^= kn[2];
    s[1] ^= kn[3];
    s[2] ^= kn[0];
    s[3] ^= kn[1];
    s
}

/// SSCIs of the members of a CA (IEEE 802.1AE 10.7.13): 1, 2, … in descending SCI order.
pub fn assign_sscis(scis: &mut [Sci]) -> Vec<(Sci, u32)> {
    scis.sort_unstable_by(|a, b| b.cmp(a));
    scis.iter()
        .enumerate()
        .map(|(i, s)| (*s, i as u32 + 1))
        .collect()
}

impl Participant {
    /// A participant for the CA of `cak`/`ckn` on the port with `sci`; MKPDUs carry the MAC
    /// address of the SCI as source. `provider` must implement [`super::kdf::primitives`];
    /// `rng` makes the MI, KS-nonces and nothing else. `now` is CLOCK_MONOTONIC in ns.
    pub fn new(
        cfg: Config,
        cak: &[u8],
        ckn: &[u8],
        sci: Sci,
        provider: &CryptoProvider,
        rng: impl SecureRandom + 'static,
        now: u64,
    ) -> Result<Participant, MkaError> {
        cfg.check()?;
        if ckn.is_empty() || ckn.len() > MAX_CKN_LEN {
            return Err(KeyError::BadCknLength(ckn.len()).into());
        }
        let keys = Arc::new(CaKeys::new(provider, cak, ckn)?);
        let rng: Box<dyn SecureRandom> = Box::new(rng);
        let mi = rand_mi(rng.as_ref())?;
        let mut src = [0u8; 6];
        src.copy_from_slice(&sci.0[..6]);
        Ok(Participant {
            cfg,
            keys,
            ckn: ckn.to_vec(),
            sci,
            src: MacAddr(src),
            rng,
            mi,
            mn: 1,
            sent: VecDeque::new(),
            peers: Vec::new(),
            key_server: None,
            latest: None,
            old: None,
            next_kn: 1,
            first_an: 0,
            distributing: None,
            cak_out: None,
            cak_in: None,
            retire_at: None,
            next_hello: now,
            ramp_sent: 0,
            pending_tx: true,
            events: VecDeque::new(),
            counters: Counters::default(),
        })
    }

    /// This participant's SCI.
    pub fn sci(&self) -> Sci {
        self.sci
    }

    /// A copy of this participant in its current state that draws its randomness (MIs,
    /// KS-nonces) from `rng` from now on; the CA's keys are shared. For model checkers and
    /// simulations that explore several futures of one state (`crates/ivnsec-model`): the copy
    /// behaves exactly as this one would given the same inputs and the same random bytes.
    pub fn fork(&self, rng: impl SecureRandom + 'static) -> Participant {
        Participant {
            cfg: self.cfg,
            keys: Arc::clone(&self.keys),
            ckn: self.ckn.clone(),
            sci: self.sci,
            src: self.src,
            rng: Box::new(rng),
            mi: self.mi,
            mn: self.mn,
            sent: self.sent.clone(),
            peers: self.peers.clone(),
            key_server: self.key_server,
            latest: self.latest.clone(),
            old: self.old.clone(),
            next_kn: self.next_kn,
            first_an: self.first_an,
            distributing: self.distributing.clone(),
            cak_out: self.cak_out.clone(),
            cak_in: self.cak_in.clone(),
            retire_at: self.retire_at,
            next_hello: self.next_hello,
            ramp_sent: self.ramp_sent,
            pending_tx: self.pending_tx,
            events: self.events.clone(),
            counters: self.counters,
        }
    }

    /// Feeds everything that decides this participant's future behaviour into `h`: MI and MN,
    /// the MNs sent and when, the peer table, the election, the keys (by key identifier, AN,
    /// flags, PNs and times — never the SAK's bytes; a distribution by its wrapped form, as on
    /// the wire), timers and queued events. Not the counters, the configuration or the CA's
    /// keys, which are fixed or do not feed back; not the random source (the caller that
    /// supplies it accounts for its position). Two participants of one CA with equal digests
    /// (and equal random sources) behave alike: a model checker's visited set.
    pub fn state_digest<H: Hasher>(&self, h: &mut H) {
        self.sci.hash(h);
        self.mi.hash(h);
        self.mn.hash(h);
        self.sent.len().hash(h);
        for s in &self.sent {
            s.hash(h);
        }
        self.peers.len().hash(h);
        for p in &self.peers {
            (
                p.mi,
                p.mn,
                p.sci,
                p.priority,
                p.key_server,
                p.live,
                p.expires,
            )
                .hash(h);
            (p.version, p.sak_use, p.xpn).hash(h);
        }
        self.key_server.hash(h);
        for k in [&self.latest, &self.old] {
            k.is_some().hash(h);
            if let Some(k) = k {
                (k.id, k.an, k.salt, k.confidentiality_offset).hash(h);
                k.members.hash(h);
                k.peer_mis.hash(h);
                (k.created, k.rx, k.tx, k.tx_pn, k.tx_since).hash(h);
            }
        }
        (self.next_kn, self.first_an).hash(h);
        self.distributing.is_some().hash(h);
        if let Some(d) = &self.distributing {
            (d.key, d.an).hash(h);
            d.wrapped.hash(h);
        }
        // The Distributed CAKs by their wrapped form, as on the wire.
        (&self.cak_out, &self.cak_in).hash(h);
        (
            self.retire_at,
            self.next_hello,
            self.ramp_sent,
            self.pending_tx,
        )
            .hash(h);
        // Events are drained by the caller after every call; a queue left full is counted.
        self.events.len().hash(h);
    }

    /// Longest MKPDU this participant can send (a transmit buffer of this size always fits).
    pub fn max_frame_len(&self) -> usize {
        mkpdu::HEADER_LEN
            + 4
            + mkpdu::padded(mkpdu::BASIC_FIXED_LEN + MAX_CKN_LEN)
            + 2 * (4 + mkpdu::PEER_ENTRY_LEN * self.cfg.max_peers)
            + 4
            + mkpdu::SAK_USE_LEN
            + 4
            + 52
            + 4
            + mkpdu::padded(mkpdu::MAX_DISTRIBUTED_CAK_LEN)
            + 4
            + mkpdu::XPN_LEN
            + mkpdu::ICV_LEN
    }

    fn push_event(&mut self, e: Event) {
        if matches!(e, Event::IcvFailure { .. }) && self.events.len() >= MAX_QUEUED_EVENTS {
            self.counters.events_dropped += 1;
            return;
        }
        self.events.push_back(e);
    }

    fn drop_pdu(&mut self, d: MkaDrop) -> Result<(), MkaDrop> {
        if let Some(c) = self.counters.drops.get_mut(d.index()) {
            *c += 1;
        }
        Err(d)
    }

    /// The lowest MN this participant sent within the life time (a peer listing an MN below
    /// it has not heard from us recently).
    fn lowest_recent_mn(&self, now: u64) -> Option<u32> {
        self.sent
            .iter()
            .find(|(_, t)| t.saturating_add(self.cfg.life_ns) > now)
            .map(|(mn, _)| *mn)
    }

    /// Handles one received frame (the whole Ethernet frame, EtherType 0x888E). `Ok` when it
    /// was accepted; a drop is counted and returned. See [`MkaDrop`] for the two drops that
    /// still use the rest of the MKPDU.
    pub fn handle_pdu(&mut self, now: u64, frame: &[u8]) -> Result<(), MkaDrop> {
        let f = match Frame::new_checked(frame) {
            Ok(f) => f,
            Err(e) => return self.drop_pdu(MkaDrop::Malformed(e)),
        };
        let dst = f.dst();
        if dst != self.cfg.destination && dst != self.src {
            return self.drop_pdu(MkaDrop::NotForUs);
        }
        let r = match Repr::parse(&f) {
            Ok(r) => r,
            Err(e) => return self.drop_pdu(MkaDrop::Malformed(e)),
        };
        if r.basic.version == 0 || r.basic.algorithm_agility != ALGORITHM_AGILITY {
            return self.drop_pdu(MkaDrop::Unsupported);
        }
        if r.basic.ckn != self.ckn.as_slice() {
            return self.drop_pdu(MkaDrop::UnknownCkn);
        }
        if !self.keys.verify_icv(f.signed(), f.icv()) {
            let src = f.src();
            self.push_event(Event::IcvFailure { src });
            return self.drop_pdu(MkaDrop::BadIcv);
        }
        if r.basic.sci == self.sci || f.src() == self.src {
            return self.drop_pdu(MkaDrop::OwnPdu);
        }
        if r.basic.mi == self.mi {
            // Another member drew our MI: draw a new one (clause 9.4.2) and drop the PDU.
            if let Ok(mi) = rand_mi(self.rng.as_ref()) {
                self.new_mi(mi);
            }
            return self.drop_pdu(MkaDrop::OwnPdu);
        }
        let idx = match self.peers.iter().position(|p| p.mi == r.basic.mi) {
            Some(i) if self.peers.get(i).is_some_and(|p| r.basic.mn <= p.mn) => {
                return self.drop_pdu(MkaDrop::StaleMn);
            }
            Some(i) => i,
            None => {
                if self.peers.len() >= self.cfg.max_peers {
                    return self.drop_pdu(MkaDrop::TooManyPeers);
                }
                self.peers.push(Peer {
                    mi: r.basic.mi,
                    mn: 0,
                    sci: r.basic.sci,
                    priority: r.basic.key_server_priority,
                    key_server: false,
                    live: false,
                    expires: 0,
                    version: r.basic.version,
                    sak_use: None,
                    xpn: None,
                });
                // A new potential peer: answer at once so it can list us.
                self.pending_tx = true;
                self.peers.len() - 1
            }
        };
        self.counters.pdus_accepted += 1;
        let recent = self.lowest_recent_mn(now);
        let lists_us = [r.live_peers, r.potential_peers]
            .iter()
            .flatten()
            .filter_map(|l| l.find(&self.mi))
            .any(|mn| recent.is_some_and(|low| mn >= low) && mn < self.mn);
        let life = self.cfg.life_ns;
        let became_live = {
            let Some(p) = self.peers.get_mut(idx) else {
                return self.drop_pdu(MkaDrop::TooManyPeers);
            };
            p.mn = r.basic.mn;
            p.sci = r.basic.sci;
            p.priority = r.basic.key_server_priority;
            p.key_server = r.basic.key_server;
            p.version = r.basic.version;
            if lists_us || !p.live {
                p.expires = now.saturating_add(life);
            }
            if p.live {
                p.sak_use = r.sak_use;
                p.xpn = r.xpn;
            }
            let became = lists_us && !p.live;
            if became {
                p.live = true;
                p.sak_use = r.sak_use;
                p.xpn = r.xpn;
            }
            became
        };
        if became_live {
            let (sci, mi) = (r.basic.sci, r.basic.mi);
            // A new MI of a known SCI replaces the old one (the peer restarted).
            let stale: Vec<Mi> = self
                .peers
                .iter()
                .filter(|p| p.sci == sci && p.mi != mi)
                .map(|p| p.mi)
                .collect();
            for m in stale {
                self.remove_peer(&m);
            }
            self.counters.peers_live += 1;
            self.push_event(Event::PeerLive { sci, mi });
            self.add_receiver(sci);
            self.pending_tx = true;
        }
        self.elect(now);
        let live = self.peers.iter().any(|p| p.mi == r.basic.mi && p.live);
        let result = match r.distributed_sak {
            Some(d) if live => self.accept_sak(now, &r, d),
            _ => Ok(()),
        };
        // Like a Distributed SAK, a Distributed CAK counts once its sender is live: the key
        // server repeats it in every MKPDU.
        let cak_result = match r.distributed_cak {
            Some(c) if live => self.accept_cak(&r, c),
            _ => Ok(()),
        };
        // One counted drop per MKPDU: when both are refused, the SAK's reason.
        let result = result.and(cak_result);
        self.progress(now);
        match result {
            Err(d) => self.drop_pdu(d),
            Ok(()) => Ok(()),
        }
    }

    /// A peer that became live after a SAK was installed gets receive SAs of the SAKs in use
    /// (clause 9.10: a receive SC for every live peer), or frames it sends under them would be
    /// dropped until the next SAK. That happens when the key server distributes as soon as it
    /// sees a new member live, before the other members and the new one saw each other. GCM-AES
    /// only: an XPN SAK is accepted once this member's view of the membership matches the key
    /// server's (SSCIs follow it), and a join always makes the key server distribute anew.
    fn add_receiver(&mut self, sci: Sci) {
        if self.cfg.suite.is_xpn() {
            return;
        }
        let suite = self.cfg.suite;
        let mut installs = Vec::new();
        for k in [self.latest.as_mut(), self.old.as_mut()]
            .into_iter()
            .flatten()
        {
            if k.rx && !k.members.iter().any(|(s, _)| *s == sci) {
                k.members.push((sci, None));
                installs.push(SaInstall {
                    key: k.id,
                    an: k.an,
                    suite,
                    sak: Sak(Zeroizing::new(k.sak.to_vec())),
                    salt: k.salt,
                    confidentiality_offset: k.confidentiality_offset,
                    scs: vec![(sci, None)],
                    lowest_pn: 1,
                });
            }
        }
        for i in installs {
            self.push_event(Event::InstallRx(i));
        }
    }

    fn new_mi(&mut self, mi: Mi) {
        self.mi = mi;
        self.mn = 1;
        self.sent.clear();
        self.pending_tx = true;
    }

    fn remove_peer(&mut self, mi: &Mi) {
        if let Some(i) = self.peers.iter().position(|p| &p.mi == mi) {
            let p = self.peers.remove(i);
            if p.live {
                self.counters.peers_lost += 1;
                self.push_event(Event::PeerLost {
                    sci: p.sci,
                    mi: p.mi,
                });
            }
        }
    }

    /// Advances the clock: peers not heard from within the life time are lost, hellos and
    /// rekeys fall due, old keys retire.
    pub fn handle_timeout(&mut self, now: u64) {
        let expired: Vec<Mi> = self
            .peers
            .iter()
            .filter(|p| p.expires <= now)
            .map(|p| p.mi)
            .collect();
        for mi in expired {
            self.remove_peer(&mi);
        }
        self.elect(now);
        if now >= self.next_hello {
            self.pending_tx = true;
        }
        self.progress(now);
    }

    /// The next time [`handle_timeout`](Self::handle_timeout) has work, in ns. Call
    /// [`poll_transmit`](Self::poll_transmit) first: while an MKPDU is pending this is `now`.
    pub fn poll_timeout(&self) -> Option<u64> {
        let mut t = self.next_hello;
        for p in &self.peers {
            t = t.min(p.expires);
        }
        if let Some(r) = self.retire_at {
            t = t.min(r);
        }
        if let (Some(l), true) = (self.latest.as_ref(), self.old.is_some()) {
            if let Some(since) = l.tx_since {
                t = t.min(
                    since
                        .saturating_add(self.cfg.life_ns)
                        .saturating_add(self.cfg.sak_retire_ns),
                );
            }
        }
        // The rekey timer, while a rekey could start (the previous one has completed).
        let ours = self
            .latest
            .as_ref()
            .filter(|l| l.id.mi == self.mi && l.tx && self.old.is_none());
        if let (true, Some(l), Some(i)) = (self.is_key_server(), ours, self.cfg.rekey_interval_ns) {
            t = t.min(l.created.saturating_add(i));
        }
        Some(t)
    }

    fn hello_interval(&self) -> u64 {
        let steady = self.cfg.hello();
        match self.cfg.ramp_up {
            Some(r) if self.ramp_sent < r.count => r
                .first_ns
                .saturating_mul(1u64 << self.ramp_sent.min(30))
                .min(steady),
            _ => steady,
        }
    }

    /// Writes the next MKPDU (a whole Ethernet frame) into `buf` when one is due and returns
    /// its length. A buffer shorter than [`max_frame_len`](Self::max_frame_len) may not fit:
    /// then nothing is sent (counted) and the MKPDU stays pending.
    pub fn poll_transmit(&mut self, now: u64, buf: &mut [u8]) -> Option<usize> {
        if !self.pending_tx && now < self.next_hello {
            return None;
        }
        let live: Vec<PeerEntry> = self
            .peers
            .iter()
            .filter(|p| p.live)
            .map(|p| PeerEntry { mi: p.mi, mn: p.mn })
            .collect();
        let potential: Vec<PeerEntry> = self
            .peers
            .iter()
            .filter(|p| !p.live)
            .map(|p| PeerEntry { mi: p.mi, mn: p.mn })
            .collect();
        let suite = self.cfg.suite;
        let sak_use = self.latest.as_ref().map(|l| {
            let old = self.old.as_ref();
            SakUse {
                latest_an: l.an,
                latest_tx: l.tx,
                latest_rx: l.rx,
                old_an: old.map_or(0, |o| o.an),
                old_tx: old.is_some_and(|o| o.tx),
                old_rx: old.is_some_and(|o| o.rx),
                plain_tx: false,
                plain_rx: false,
                delay_protect: self.cfg.delay_protect,
                keys: Some(SakUseKeys {
                    latest: l.id,
                    latest_lowest_pn: l.tx_pn as u32,
                    old: old.map_or(KeyId::default(), |o| o.id),
                    old_lowest_pn: old.map_or(0, |o| o.tx_pn as u32),
                }),
            }
        });
        let xpn = (suite.is_xpn() && sak_use.is_some()).then(|| XpnParams {
            suspension_time: 0,
            latest_lowest_pn_high: self.latest.as_ref().map_or(0, |l| (l.tx_pn >> 32) as u32),
            old_lowest_pn_high: self.old.as_ref().map_or(0, |o| (o.tx_pn >> 32) as u32),
        });
        let dist = self.distributing.as_ref().filter(|_| self.is_key_server());
        let distributed_sak = dist.map(|d| DistributedSak {
            an: d.an,
            confidentiality_offset: self.cfg.confidentiality_offset,
            key: Some(DistributedKey {
                kn: d.key.kn,
                cipher_suite: (suite != CipherSuite::GcmAes128).then(|| suite.identifier()),
                wrapped: &d.wrapped,
            }),
        });
        let distributed_cak = self
            .cak_out
            .as_ref()
            .filter(|_| self.is_key_server())
            .map(|c| DistributedCak { body: &c.body });
        let key_server_ssci = match (suite.is_xpn(), dist, self.latest.as_ref()) {
            (true, Some(_), Some(l)) => Self::own_ssci(l, self.sci).map_or(0, |s| s as u8),
            _ => 0,
        };
        let repr = Repr {
            basic: BasicParamSet {
                version: MKA_VERSION,
                key_server_priority: self.cfg.key_server_priority,
                key_server: self.is_key_server(),
                macsec_desired: true,
                macsec_capability: 2,
                sci: self.sci,
                mi: self.mi,
                mn: self.mn,
                algorithm_agility: ALGORITHM_AGILITY,
                ckn: &self.ckn,
            },
            live_peers: (!live.is_empty()).then_some(PeerList::Entries(&live)),
            key_server_ssci,
            potential_peers: (!potential.is_empty()).then_some(PeerList::Entries(&potential)),
            sak_use,
            distributed_sak,
            distributed_cak,
            xpn,
            icv_indicator: false,
            skipped: 0,
        };
        let n = match repr.emit(self.cfg.destination, self.src, buf) {
            Ok(n) => n,
            Err(_) => {
                self.counters.tx_buffer_too_small += 1;
                return None;
            }
        };
        let signed_len = n.saturating_sub(mkpdu::ICV_LEN);
        let icv = self.keys.icv(buf.get(..signed_len).unwrap_or_default());
        match buf.get_mut(signed_len..n) {
            Some(slot) if slot.len() == icv.len() => slot.copy_from_slice(&icv),
            _ => {
                self.counters.tx_buffer_too_small += 1;
                return None;
            }
        }

        // Bookkeeping for the next one.
        self.counters.pdus_sent += 1;
        if self.sent.len() >= MN_HISTORY {
            self.sent.pop_front();
        }
        self.sent.push_back((self.mn, now));
        while self
            .sent
            .front()
            .is_some_and(|(_, t)| t.saturating_add(self.cfg.life_ns) <= now)
            && self.sent.len() > 1
        {
            self.sent.pop_front();
        }
        if self.mn == u32::MAX {
            if let Ok(mi) = rand_mi(self.rng.as_ref()) {
                self.new_mi(mi);
            }
        } else {
            self.mn += 1;
        }
        self.next_hello = now.saturating_add(self.hello_interval());
        if self.cfg.ramp_up.is_some_and(|r| self.ramp_sent < r.count) {
            self.ramp_sent += 1;
        }
        self.pending_tx = false;
        Some(n)
    }

    /// The next event, oldest first.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Makes the first SAK this participant distributes as key server take association number
    /// `an` (0..=3; default 0), later ones the next free as always. A participant that takes
    /// over a SecY from another on an older CAK (`macsec up --keyserver`) picks an AN the old
    /// one's SAKs do not use, so both CAKs' SAs stay installed side by side until the old ones
    /// retire (make-before-break across CAKs).
    pub fn prefer_first_an(&mut self, an: u8) {
        self.first_an = an & 3;
    }

    /// Distributes the CAK `cak` (16 or 32 octets) named `ckn` (1..=32 octets) to the live
    /// peers of this CA (clause 9.8, a group CA's CAK from the key server of pairwise CAs): it
    /// is wrapped under this CA's KEK and repeated in every MKPDU while this participant is the
    /// elected key server, from the next one on (sent at once if it is). A participant that is
    /// not the key server (yet) keeps it and sends it once it is elected. A new call replaces
    /// the previous CAK; [`stop_distributing_cak`](Self::stop_distributing_cak) ends it. The
    /// caller keeps the CAK; this participant holds only its wrapped form.
    pub fn distribute_cak(&mut self, now: u64, cak: &[u8], ckn: &[u8]) -> Result<(), MkaError> {
        if cak.len() != 16 && cak.len() != 32 {
            return Err(KeyError::BadCakLength(cak.len()).into());
        }
        if ckn.is_empty() || ckn.len() > MAX_CKN_LEN {
            return Err(KeyError::BadCknLength(ckn.len()).into());
        }
        let mut body = self.keys.wrap_sak(cak)?;
        let wrapped_len = body.len();
        body.extend_from_slice(ckn);
        self.cak_out = Some(CakBody { body, wrapped_len });
        if self.is_key_server() {
            self.pending_tx = true;
        }
        self.progress(now);
        Ok(())
    }

    /// Whether this participant, as key server, distributes SAKs ([`Config::distribute_sak`]).
    pub fn set_distribute_sak(&mut self, on: bool) {
        self.cfg.distribute_sak = on;
    }

    /// Stops distributing the CAK of [`distribute_cak`](Self::distribute_cak) (MKPDUs carry
    /// it no more).
    pub fn stop_distributing_cak(&mut self) {
        self.cak_out = None;
    }

    /// The data plane reports the next PN of the transmit SA with association number `an`.
    /// The key server rekeys when it reaches the threshold; the others report it in their SAK
    /// Use parameter set so the key server does.
    pub fn report_tx_pn(&mut self, now: u64, an: u8, next_pn: u64) {
        let mut changed = false;
        for k in [self.latest.as_mut(), self.old.as_mut()]
            .into_iter()
            .flatten()
        {
            if k.tx && k.an == an && next_pn > k.tx_pn {
                let crossed =
                    k.tx_pn < self.cfg.pn_threshold() && next_pn >= self.cfg.pn_threshold();
                k.tx_pn = next_pn;
                changed |= crossed;
            }
        }
        if changed {
            // Tell the key server now rather than at the next hello.
            self.pending_tx = true;
        }
        self.progress(now);
    }

    /// A snapshot of the state and counters.
    pub fn snapshot(&self) -> Status {
        Status {
            sci: self.sci,
            mi: self.mi,
            mn: self.mn,
            suite: self.cfg.suite,
            key_server: self.key_server.map(|(s, _)| s),
            is_key_server: self.is_key_server(),
            peers: self
                .peers
                .iter()
                .map(|p| PeerStatus {
                    sci: p.sci,
                    mi: p.mi,
                    mn: p.mn,
                    live: p.live,
                    key_server_priority: p.priority,
                })
                .collect(),
            latest: self.latest.as_ref().map(Key::status),
            old: self.old.as_ref().map(Key::status),
            distributing_cak: self.cak_out.as_ref().map(CakBody::ckn),
            received_cak: self.cak_in.as_ref().map(CakBody::ckn),
            counters: self.counters,
        }
    }

    /// The counters.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }
}
