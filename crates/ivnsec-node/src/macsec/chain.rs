//! A SecY's chain of connectivity associations: the MKA participant on the CAK in force, and
//! the participants of the CAKs it replaced while their SAs are handed over (make-before-
//! break across CAKs). The key server's CAK rotation (`--keyserver`) and 802.1X (`--eap-tls`,
//! `--authenticator`: EAP-derived, fallback and group CAKs) both move a SecY from one CAK to
//! the next through it.
//!
//! - **Switch**: a new participant starts on the new CAK at once (its own MKPDUs, under the
//!   new CKN); the previous one stops sending MKPDUs and its SAs stay in the SecY, so the
//!   traffic goes on under its SAK.
//! - **Handover**: once the new participant transmits under a SAK of its own and the SAK
//!   retire time has passed — or at the latest after [`HANDOVER_LIMIT`] — every SA of an old
//!   CAK that the new one has not replaced is retired.
//! - **ANs**: the new participant's first SAK (when it is the key server) takes an AN two
//!   ahead of the previous CAK's latest SAK, so the receive SAs of both are installed side by
//!   side and no peer's frames are dropped while it switches.
//! - **Several switches in a row**: with [`Stack::Retire`] (the key server's rotation: an
//!   ECU left out must lose access) a CAK replaced before the previous handover ended has its
//!   SAs retired at once; with [`Stack::Keep`] (802.1X: fallback → pairwise → group within a
//!   second) every old CAK stays until the newest transmits, so no frame is lost in between.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Result;
use ivnsec_core::profile::MacsecProfile;
use ivnsec_core::wire::macsec::Sci;
use ivnsec_crypto::ProviderChoice;
use serde_json::{Value, json};

use super::mka::{MkaKeys, MkaSettings};
use super::{KeySource, SecyControl};
use crate::keys::psk::Psk;

/// The old CAK's SAs are retired at the latest this long after a new CAK arrived.
pub const HANDOVER_LIMIT: Duration = Duration::from_secs(30);

/// How to make a participant on a CAK.
#[derive(Clone, Debug)]
pub struct Params {
    pub profile: MacsecProfile,
    pub iface: String,
    pub sci: Sci,
    pub settings: MkaSettings,
    pub state_dir: PathBuf,
    pub reserve_block: u64,
    pub provider: ProviderChoice,
    /// The used-SAK record of every participant (beside the member's private key:
    /// `used_sak::record_path(--key)`; docs/mka.md).
    pub sak_record: PathBuf,
}

/// What happens to older CAKs still in handover when a new switch comes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stack {
    /// Their SAs are retired at once.
    Retire,
    /// They stay until the newest CAK transmits.
    Keep,
}

/// A participant and the name of its CAK (status and events).
struct Member {
    mka: MkaKeys,
    label: String,
    ckn: Vec<u8>,
}

struct Old {
    member: Member,
    since: Instant,
    /// When the newest participant was first seen transmitting under its own SAK.
    new_tx: Option<Instant>,
}

/// The participants of one SecY, the newest first.
pub struct CaChain {
    params: Params,
    stack: Stack,
    current: Option<Member>,
    old: Vec<Old>,
    changes: u64,
}

/// A participant on `psk`; `source` names the CAK's origin in the status (the PSK file field).
pub fn participant(p: &Params, psk: &Psk, source: &str) -> Result<MkaKeys> {
    MkaKeys::new(
        p.profile,
        PathBuf::from(source),
        p.sak_record.clone(),
        psk,
        &p.iface,
        p.sci,
        p.settings,
        p.state_dir.clone(),
        p.reserve_block,
        p.provider,
    )
}

impl CaChain {
    /// An empty chain: no CAK, no SA.
    pub fn new(params: Params, stack: Stack) -> CaChain {
        CaChain {
            params,
            stack,
            current: None,
            old: Vec::new(),
            changes: 0,
        }
    }

    /// A chain whose first participant is `first` (not started yet: [`CaChain::start`]).
    pub fn with(params: Params, stack: Stack, first: MkaKeys, label: &str, ckn: &[u8]) -> CaChain {
        let mut c = CaChain::new(params, stack);
        c.current = Some(Member {
            mka: first,
            label: label.to_string(),
            ckn: ckn.to_vec(),
        });
        c
    }

    pub fn params(&self) -> &Params {
        &self.params
    }

    /// Starts the first participant, if any.
    pub fn start(&mut self, ctl: &SecyControl) -> Result<()> {
        match self.current.as_mut() {
            Some(m) => m.mka.start(ctl),
            None => Ok(()),
        }
    }

    /// The label of the CAK in force.
    pub fn label(&self) -> Option<&str> {
        self.current.as_ref().map(|m| m.label.as_str())
    }

    /// The CKN of the CAK in force.
    pub fn ckn(&self) -> Option<&[u8]> {
        self.current.as_ref().map(|m| m.ckn.as_slice())
    }

    /// How many times the CAK changed.
    pub fn changes(&self) -> u64 {
        self.changes
    }

    /// The participant in force.
    pub fn current_mut(&mut self) -> Option<&mut MkaKeys> {
        self.current.as_mut().map(|m| &mut m.mka)
    }

    /// Whether a handover is under way.
    pub fn in_handover(&self) -> bool {
        !self.old.is_empty()
    }

    /// Moves the SecY onto `psk` (named `label`, its origin `source`): a new participant
    /// starts now; the previous one is closed and handed over.
    pub fn switch(
        &mut self,
        psk: &Psk,
        label: &str,
        source: &str,
        ctl: &SecyControl,
    ) -> Result<()> {
        let next = participant(&self.params, psk, source)?;
        self.switch_to(next, label, psk.ckn(), ctl)
    }

    /// [`CaChain::switch`] to a participant made by the caller.
    pub fn switch_to(
        &mut self,
        mut next: MkaKeys,
        label: &str,
        ckn: &[u8],
        ctl: &SecyControl,
    ) -> Result<()> {
        let mut used = self
            .current
            .as_ref()
            .map(|m| m.mka.ans_in_use())
            .unwrap_or_default();
        for o in &self.old {
            for an in o.member.mka.ans_in_use() {
                if !used.contains(&an) {
                    used.push(an);
                }
            }
        }
        set_first_an(&mut next, &used);
        next.start(ctl)?;
        let prev = self.current.replace(Member {
            mka: next,
            label: label.to_string(),
            ckn: ckn.to_vec(),
        });
        if self.stack == Stack::Retire {
            self.retire_old(ctl);
        }
        if let Some(mut prev) = prev {
            prev.mka.close();
            self.old.push(Old {
                member: prev,
                since: Instant::now(),
                new_tx: None,
            });
        }
        self.changes += 1;
        Ok(())
    }

    /// No CAK any more: every participant stops and every SA of theirs is retired (no data
    /// frame is protected or accepted until the next [`CaChain::switch`]).
    pub fn clear(&mut self, ctl: &SecyControl) {
        if let Some(mut m) = self.current.take() {
            m.mka.close();
            m.mka.retire_all(ctl);
        }
        for mut o in std::mem::take(&mut self.old) {
            o.member.mka.retire_all(ctl);
        }
        self.changes += 1;
    }

    /// Retires every SA of the old CAKs that the newest has not replaced.
    fn retire_old(&mut self, ctl: &SecyControl) -> Vec<String> {
        let mut labels = Vec::new();
        for mut o in std::mem::take(&mut self.old) {
            match self.current.as_ref() {
                Some(c) => o.member.mka.retire_superseded(ctl, &c.mka),
                None => o.member.mka.retire_all(ctl),
            }
            labels.push(o.member.label);
        }
        labels
    }

    /// Polls the participant in force and ends a handover that is due; returns the labels of
    /// the CAKs whose SAs were retired.
    pub fn poll(&mut self, now: Instant, ctl: &SecyControl) -> Result<Vec<String>> {
        let Some(cur) = self.current.as_mut() else {
            return Ok(Vec::new());
        };
        cur.mka.poll(now, ctl)?;
        let tx = cur.mka.tx_in_use();
        let retire_after = self.params.settings.sak_retire;
        let mut due = false;
        for o in &mut self.old {
            if o.new_tx.is_none() && tx {
                o.new_tx = Some(now);
            }
            due |= o
                .new_tx
                .is_some_and(|t| now.duration_since(t) >= retire_after)
                || now.duration_since(o.since) >= HANDOVER_LIMIT;
        }
        Ok(if due {
            self.retire_old(ctl)
        } else {
            Vec::new()
        })
    }

    /// Waits on the participant in force (MKPDUs, timers), at most `max`.
    pub fn wait(&mut self, max: Duration) {
        match self.current.as_mut() {
            Some(m) => m.mka.wait(max),
            None => std::thread::sleep(max),
        }
    }

    /// The participant's status with `extra` fields, and the chain's own.
    pub fn describe(&self, ctl: &SecyControl) -> Value {
        let mut v = match self.current.as_ref() {
            Some(m) => m.mka.describe(ctl),
            None => json!({}),
        };
        if let Some(o) = v.as_object_mut() {
            o.insert(
                "ca".into(),
                json!({
                    "label": self.label(),
                    "ckn": self.ckn().map(hex::encode),
                    "changes": self.changes,
                    "handover": self.old.iter().map(|o| o.member.label.clone()).collect::<Vec<_>>(),
                }),
            );
        }
        v
    }
}

/// `next`'s first AN two ahead of the latest AN in use (`used`, the latest first; the next
/// free after it is where the old CAK would rekey to) and clear of every other one in use, so
/// the old SAs stay whole until they are retired.
fn set_first_an(next: &mut MkaKeys, used: &[u8]) {
    let first = match used.first() {
        Some(&latest) => (0..4)
            .map(|i| (latest + 2 + i) % 4)
            .find(|a| !used.contains(a))
            .unwrap_or(0),
        None => 0,
    };
    next.prefer_first_an(first);
}
