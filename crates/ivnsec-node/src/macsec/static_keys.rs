//! Static keys (`ivnsec macsec up --keys FILE`): one SAK from a key file for the whole
//! connectivity association, as MKA would distribute one — this SecY's transmit SA and one
//! receive SA per listed peer use it, under one AN.
//!
//! - **Nonce spaces**: GCM-AES's IV is SCI ‖ PN, so every member (its own SCI, `MAC ‖ 0001`)
//!   has its own. The XPN suites' IV is (SSCI ‖ PN) XOR salt: each member gets an SSCI by the
//!   ascending order of the SCIs of all members (this one and its `--peer`s), starting at 1
//!   ([`ssci_by_sci_order`]); every member must list the same set. The salt is the key file's
//!   `iv`.
//! - **No PN twice across restarts**: the transmit SA's PNs are reserved in the nonce state in
//!   `--state-dir` exactly as `ivnsec send` does ([`HighWater`], docs/nonce-safety.md): the state
//!   is keyed by the suite's nonce domain, the SA identity ([`tx_sa_identity`]: the SCI, or the
//!   SSCI for XPN) and the key; a restart resumes above everything reserved, the key's use is
//!   recorded in `KEYFILE.used`, and a used key without its state is refused.
//! - **No frame accepted twice across restarts**: each receive SA keeps an acceptance mark in
//!   `--state-dir` ([`RxMark`], keyed by the peer's SA identity); a restarted SecY installs its
//!   receive SAs with the lowest PN above the mark, and a frame is delivered only once the mark
//!   on disk covers its PN (docs/nonce-safety.md, "Receivers after a restart").
//! - **What static keys cannot do**: when the PNs run out the SecY stops until a new key file
//!   is installed. Agreed, rotated keys (MKA) are the remedy.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use ivnsec_core::channel::DirectionKeys;
use ivnsec_core::profile::{MacsecProfile, Profile};
use ivnsec_core::sa::secy::{SaKey, ssci_by_sci_order, tx_sa_identity};
use ivnsec_core::wire::macsec::Sci;
use serde_json::{Value, json};

use super::{KeySource, SecyControl, sci_hex};
use crate::error::usage;
use crate::keys::highwater::{self, HighWater, HwError};
use crate::keys::keyfile;
use crate::keys::rxmark::{Checkpoint, RxMark};

/// The key number static SAs carry in status and events.
pub const STATIC_KEY_NUMBER: u32 = 1;

/// Settings of the static key source.
#[derive(Debug)]
pub struct StaticKeys {
    pub profile: MacsecProfile,
    /// The key file (its `.used` record sits beside it).
    pub key_file: PathBuf,
    pub keys: DirectionKeys,
    /// This SecY's SCI (the protected interface's MAC ‖ 0001).
    pub sci: Sci,
    /// The peers' SCIs.
    pub peers: Vec<Sci>,
    pub an: u8,
    pub state_dir: PathBuf,
    pub reserve_block: u64,
    pub seq_limit: Option<u64>,
    pub confirm_new_key: bool,
    /// How far the receive SAs' acceptance marks move ahead (`--replay-checkpoint-*`).
    pub rx_checkpoint: Checkpoint,
    /// After start: the nonce state file and the first PN.
    started: Option<(PathBuf, u64)>,
}

impl StaticKeys {
    /// Checks what can be checked before anything is created: the key file (a sender's rules:
    /// private, with a `profile` line of this suite), the peers, the AN.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        profile: MacsecProfile,
        key_file: PathBuf,
        sci: Sci,
        peers: Vec<Sci>,
        an: u8,
        state_dir: PathBuf,
        reserve_block: u64,
        seq_limit: Option<u64>,
        confirm_new_key: bool,
    ) -> Result<StaticKeys> {
        let name = Profile::Macsec(profile).to_string();
        let keys = keyfile::load(&key_file, &name, keyfile::Role::Sender)?;
        if an > 3 {
            return Err(usage(format!("--an must be 0, 1, 2 or 3, got {an}")));
        }
        if peers.is_empty() {
            return Err(usage(
                "give at least one --peer MAC: the receive SCs of static keys are configured, \
                 not learned (a frame from an SCI that is not listed is discarded)",
            ));
        }
        if peers.contains(&sci) {
            return Err(usage(format!(
                "--peer {}: that is this host's own SCI (the MAC of --iface); list the other \
                 members of the CA",
                sci_hex(sci)
            )));
        }
        Ok(StaticKeys {
            profile,
            key_file,
            keys,
            sci,
            peers,
            an,
            state_dir,
            reserve_block,
            seq_limit,
            confirm_new_key,
            rx_checkpoint: Checkpoint::default(),
            started: None,
        })
    }

    /// The SSCI of every member (XPN only).
    fn sscis(&self) -> Vec<(Sci, u32)> {
        let mut all = self.peers.clone();
        all.push(self.sci);
        ssci_by_sci_order(&all)
    }

    fn key_for(&self, sci: Sci) -> SaKey<'_> {
        let xpn = self.profile.suite.is_xpn();
        let ssci = self
            .sscis()
            .into_iter()
            .find(|(s, _)| *s == sci)
            .map(|(_, n)| n);
        SaKey {
            sak: self.keys.key(),
            ssci: if xpn { ssci } else { None },
            salt: xpn.then(|| *self.keys.iv()),
            key_number: STATIC_KEY_NUMBER,
        }
    }
}

impl KeySource for StaticKeys {
    fn kind(&self) -> &'static str {
        "static"
    }

    fn start(&mut self, ctl: &SecyControl) -> Result<()> {
        let suite = self.profile.suite;
        let own = self.key_for(self.sci);
        let ident = tx_sa_identity(suite, self.sci, own.ssci);
        let opts = highwater::Options {
            block: self.reserve_block,
            seq_limit: self.seq_limit,
            protocol_max: suite.max_pn(),
            used_record: Some(keyfile::used_record(&self.key_file)),
            confirm_new_key: self.confirm_new_key,
        };
        let domain = Profile::Macsec(self.profile).nonce_domain();
        let hw = HighWater::open(&self.state_dir, &domain, &ident, &self.keys, opts)
            .map_err(HwError::into_anyhow)?;
        let first = hw.first_seq().map_err(HwError::into_anyhow)?;
        let state = hw.path().to_path_buf();
        for &peer in &self.peers {
            // The peer's SA as its sender keys its nonce state; every PN ≤ the restored mark
            // may have been accepted before a restart: the SA accepts from above it.
            let key = self.key_for(peer);
            let peer_ident = tx_sa_identity(suite, peer, key.ssci);
            let mark = RxMark::open(
                &self.state_dir,
                &domain,
                &peer_ident,
                &self.keys,
                suite.max_pn(),
                self.rx_checkpoint,
            )?;
            ctl.install_rx_sa(peer, self.an, &key, mark.restored() + 1)?;
            ctl.install_rx_mark(peer, self.an, mark);
        }
        ctl.install_tx_sa(self.an, &own, first, Some(hw))?;
        ctl.enable_tx_sa(self.an)?;
        self.started = Some((state, first));
        Ok(())
    }

    fn poll(&mut self, _now: Instant, _ctl: &SecyControl) -> Result<()> {
        Ok(())
    }

    fn describe(&self, _ctl: &SecyControl) -> Value {
        let xpn = self.profile.suite.is_xpn();
        json!({
            "key_file": self.key_file.display().to_string(),
            "an": self.an,
            "peers": self.peers.iter().map(|s| sci_hex(*s)).collect::<Vec<_>>(),
            "sscis": if xpn {
                self.sscis().into_iter().map(|(s, n)| json!({"sci": sci_hex(s), "ssci": n})).collect::<Vec<_>>()
            } else { Vec::new() },
            "nonce_state": self.started.as_ref().map(|(p, _)| p.display().to_string()),
            "first_pn": self.started.as_ref().map(|(_, f)| *f),
        })
    }
}
