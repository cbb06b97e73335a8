//! Static keys (`ivnsec macsec up --keys FILE`): one SAK from a key file for the whole
//! connectivity association, as MKA would distribute one — this SecY's transmit SA and one
//! receive SA per listed peer use it, under one AN.
//!
//! - **Nonce spaces**: GCM-AES's IV is SCI ‖ PN, so every member (its own SCI, `MAC ‖ 0001`)
//!   has its own. The XPN suites' IV is (SSCI ‖ PN) XOR salt: each member's SSCI is derived
//!   from its own SCI alone ([`static_ssci`]), never from the peer list, so adding, removing or
//!   reordering `--peer`s never moves a member onto an SSCI another one used. Two listed
//!   members whose SSCIs collide are refused, and the SCI an SSCI was first used by is recorded
//!   in the key's used-key record: the key from a second SCI under that SSCI is refused. The
//!   salt is the key file's `iv`.
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
use ivnsec_core::crypto::{MAX_MAC_LEN, MacAlg};
use ivnsec_core::profile::{MacsecProfile, NamedProfile, Profile};
use ivnsec_core::sa::secy::{SaKey, tx_sa_identity};
use ivnsec_core::wire::macsec::Sci;
use serde_json::{Value, json};

use super::{KeySource, SecyControl, sci_hex};
use crate::error::usage;
use crate::keys::highwater::{self, HighWater, HwError};
use crate::keys::keyfile;
use crate::keys::rxmark::{Checkpoint, RxMark};

/// The key number static SAs carry in status and events.
pub const STATIC_KEY_NUMBER: u32 = 1;

/// The HMAC-SHA256 key of [`static_ssci`] (a fixed label: the derivation is public).
pub const STATIC_SSCI_LABEL: &[u8] = b"ivnsec macsec static ssci v1";

/// The SSCI of a member under static XPN keys, from its SCI alone (docs/macsec-tap.md):
///
/// ```text
/// SSCI = 0x80000000 OR (the first 4 octets of HMAC-SHA256(key = "ivnsec macsec static ssci v1",
///                        message = the 8 octets of the SCI), as a big-endian u32)
/// ```
///
/// The top bit is set so that an SSCI is never 0 and never one of the small SSCIs MKA assigns
/// (1, 2, … by SCI order), `ivnsec send` uses (1 and 2) or the previous version of static keys
/// assigned (the rank of the SCI): a state or record of those never meets one of these. What is
/// left is 31 bits: two SCIs collide with probability 2^-31, and a CA whose listed members
/// collide is refused ([`check_sscis`]).
pub fn static_ssci(sci: Sci) -> u32 {
    let mac = ivnsec_crypto::PORTABLE
        .keys
        .mac(MacAlg::HmacSha256, STATIC_SSCI_LABEL)
        .expect("the portable provider has HMAC-SHA256");
    let mut out = [0u8; MAX_MAC_LEN];
    mac.compute(&[&sci.0[..]], &mut out);
    0x8000_0000 | u32::from_be_bytes([out[0], out[1], out[2], out[3]])
}

/// The SSCIs of the members (sorted by SCI, duplicates removed); a usage error naming both
/// when two of them derive the same SSCI (they would share (SSCI, PN) nonces under the key).
pub fn check_sscis(members: &[Sci]) -> Result<Vec<(Sci, u32)>> {
    let mut scis = members.to_vec();
    scis.sort_unstable();
    scis.dedup();
    let all: Vec<(Sci, u32)> = scis.into_iter().map(|s| (s, static_ssci(s))).collect();
    for (i, (a, sa)) in all.iter().enumerate() {
        if let Some((b, _)) = all[i + 1..].iter().find(|(_, sb)| sb == sa) {
            return Err(usage(format!(
                "the SCIs {} and {} derive the same XPN SSCI {sa:#010x} (docs/macsec-tap.md: \
                 the SSCI is a function of the SCI alone); two members under one SSCI would \
                 reuse (key, nonce) pairs. Give one of them another MAC address, or use MKA \
                 (--psk), whose key server assigns the SSCIs",
                sci_hex(*a),
                sci_hex(*b)
            )));
        }
    }
    Ok(all)
}

/// A note of the used-key record entry of a static XPN SA: `static sci <SCI> ssci <N> key
/// <tag>` (the tag: 32 hex digits of a fingerprint of the key alone, so entries of another key
/// in a reused file name are not compared).
fn binding_note(sci: Sci, ssci: u32, key_tag: &str) -> String {
    format!("static sci {} ssci {ssci} key {key_tag}", sci_hex(sci))
}

/// (SCI, SSCI, key tag) of a binding note in a used-key record entry.
fn parse_binding(info: &str) -> Option<(String, u32, String)> {
    let note = info
        .split(" | ")
        .find_map(|f| f.strip_prefix("static sci "))?;
    let mut w = note.split(' ');
    let sci = w.next()?;
    let (Some("ssci"), Some(n), Some("key"), Some(tag)) = (w.next(), w.next(), w.next(), w.next())
    else {
        return None;
    };
    Some((sci.to_string(), n.parse().ok()?, tag.to_string()))
}

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
        let name = NamedProfile::from(Profile::Macsec(profile));
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
        if profile.suite.is_xpn() {
            let mut all = peers.clone();
            all.push(sci);
            check_sscis(&all)?;
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

    /// The SSCI of every member, sorted by SCI (XPN only).
    fn sscis(&self) -> Vec<(Sci, u32)> {
        let mut all: Vec<Sci> = self.peers.clone();
        all.push(self.sci);
        all.sort_unstable();
        all.dedup();
        all.into_iter().map(|s| (s, static_ssci(s))).collect()
    }

    fn key_for(&self, sci: Sci) -> SaKey<'_> {
        let xpn = self.profile.suite.is_xpn();
        SaKey {
            sak: self.keys.key(),
            ssci: xpn.then(|| static_ssci(sci)),
            salt: xpn.then(|| *self.keys.iv()),
            key_number: STATIC_KEY_NUMBER,
        }
    }

    /// XPN: the key's used-key record binds each SSCI to the SCI that first used it. Refused
    /// (usage): this key under this host's SSCI from another SCI before, or this SCI under
    /// another SSCI before. Returns the note this host's entry carries.
    fn check_binding(&self, domain: &str, ssci: u32) -> Result<String> {
        let record = keyfile::used_record(&self.key_file);
        let tag = highwater::fingerprint(domain, "macsec static key", self.keys.key(), &[]);
        let tag = &tag[..32];
        let own = sci_hex(self.sci);
        for (_, info) in highwater::used_record_entries(&record).map_err(HwError::into_anyhow)? {
            let Some((sci, n, t)) = parse_binding(&info) else {
                continue;
            };
            if t != tag {
                continue;
            }
            if n == ssci && sci != own {
                return Err(usage(format!(
                    "key file {}: SSCI {ssci} was first used under this key by SCI {sci} ({} \
                     lists it: {info}); this host's SCI {own} derives the same SSCI, so the two \
                     would reuse (key, nonce) pairs. Give one of the hosts another MAC address, \
                     or install a new key (`ivnsec keygen`)",
                    self.key_file.display(),
                    record.display()
                )));
            }
            if sci == own && n != ssci {
                return Err(usage(format!(
                    "key file {}: this host's SCI {own} first used this key under SSCI {n} ({} \
                     lists it: {info}), but now derives SSCI {ssci}; an SSCI that moves may land \
                     on one another member used. Install a new key (`ivnsec keygen`) on every \
                     member",
                    self.key_file.display(),
                    record.display()
                )));
            }
        }
        Ok(binding_note(self.sci, ssci, tag))
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
            grow: true,
            confirm_new_key: self.confirm_new_key,
        };
        let domain = Profile::Macsec(self.profile).nonce_domain();
        let note = match own.ssci {
            Some(ssci) => Some(self.check_binding(&domain, ssci)?),
            None => None,
        };
        let mut hw = HighWater::open(&self.state_dir, &domain, &ident, &self.keys, opts)
            .map_err(HwError::into_anyhow)?;
        if let Some(n) = &note {
            hw.set_record_note(n);
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::DirBuilder;
    use std::os::unix::fs::DirBuilderExt;
    use std::path::Path;

    fn sci(mac: u64) -> Sci {
        Sci::from_u64(mac << 16 | 1)
    }

    /// Known answers from Python's `hmac` module (an independent implementation of the
    /// documented function): `0x80000000 | int.from_bytes(hmac.new(b"ivnsec macsec static ssci
    /// v1", sci, "sha256").digest()[:4], "big")`.
    #[test]
    fn the_ssci_is_the_documented_function_of_the_sci() {
        for (mac, want) in [
            (0x02_00_00_00_00_0a, 0xc3e7_df5a),
            (0x02_00_00_00_00_0b, 0xfcc0_978f),
            (0x02_00_00_00_00_03, 0xb750_8b77),
            (0x00_00_00_00_00_00, 0xec54_6cea),
        ] {
            assert_eq!(static_ssci(sci(mac)), want, "{mac:012x}");
        }
    }

    /// The SSCI of a member does not depend on who else is listed, nor in which order; two
    /// members that collide are refused with both SCIs named (the pair found with the Python
    /// function above by a birthday search).
    #[test]
    fn sscis_follow_the_sci_alone_and_collisions_are_refused() {
        let (a, b, c) = (
            sci(0x0200_0000_000a),
            sci(0x0200_0000_000b),
            sci(0x0200_0000_0003),
        );
        let two = check_sscis(&[a, b]).unwrap();
        let three = check_sscis(&[c, b, a, b]).unwrap();
        assert_eq!(three.len(), 3);
        for (s, n) in &two {
            assert!(three.contains(&(*s, *n)));
        }
        let (x, y) = (sci(0x02cc_0000_7f05), sci(0x02cc_0000_fb5e));
        assert_eq!(static_ssci(x), 0xca1d_7e61);
        assert_eq!(static_ssci(y), 0xca1d_7e61);
        let e = check_sscis(&[a, y, x]).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
        let m = e.to_string();
        assert!(
            m.contains("02cc00007f050001") && m.contains("02cc0000fb5e0001"),
            "{m}"
        );
        assert!(m.contains("0xca1d7e61"), "{m}");
    }

    fn temp(tag: &str) -> PathBuf {
        let mut r = [0u8; 6];
        getrandom::fill(&mut r).unwrap();
        let p = std::env::temp_dir().join(format!("ivnsec-ssci-{tag}-{}", hex::encode(r)));
        DirBuilder::new().mode(0o700).create(&p).unwrap();
        p
    }

    fn keys_at(dir: &Path, own: Sci, peers: Vec<Sci>) -> StaticKeys {
        let profile = match "macsec-gcm-aes-xpn-128".parse::<Profile>().unwrap() {
            Profile::Macsec(m) => m,
            _ => unreachable!(),
        };
        let file = dir.join("ca.toml");
        if !file.exists() {
            let k = DirectionKeys::new(&[0x5a; 16], &[], [7; 12]);
            keyfile::write_new(&file, "macsec-gcm-aes-xpn-128", &k).unwrap();
        }
        StaticKeys::new(
            profile,
            file,
            own,
            peers,
            0,
            dir.join("state"),
            16,
            None,
            false,
        )
        .unwrap()
    }

    /// The used-key record binds an SSCI to the SCI that used it first: the key from a second
    /// SCI under that SSCI, or the SCI under another SSCI, is refused naming the first use;
    /// entries of the previous version (no binding) and of another key are not compared.
    #[test]
    fn the_used_key_record_binds_each_ssci_to_one_sci() {
        use std::io::Write;
        let d = temp("bind");
        let (a, b) = (sci(0x0200_0000_000a), sci(0x0200_0000_000b));
        let k = keys_at(&d, a, vec![b]);
        let domain = "macsec-gcm-aes-xpn-128";
        let ssci_a = static_ssci(a);
        // No record: fine, and the note names the binding.
        let note = k.check_binding(domain, ssci_a).unwrap();
        assert!(note.starts_with(&format!("static sci {} ssci {ssci_a} key ", sci_hex(a))));
        let tag = note.rsplit(' ').next().unwrap().to_string();
        let record = keyfile::used_record(&k.key_file);
        let write = |lines: &[String]| {
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .write(true)
                .truncate(true)
                .mode(0o600)
                .open(&record)
                .unwrap();
            writeln!(f, "ivnsec-used-keys 1").unwrap();
            for l in lines {
                writeln!(f, "{l}").unwrap();
            }
        };
        use std::os::unix::fs::OpenOptionsExt;
        let fp = "ab".repeat(32);
        // The previous version's entry for SSCI 1 and an entry of another key: not compared.
        write(&[
            format!("used {fp} {domain} | macsec-xpn ssci 1 | /s/x.hw"),
            format!(
                "used {fp} {domain} | macsec-xpn ssci {ssci_a} | /s/y.hw | static sci {} ssci {ssci_a} key {}",
                sci_hex(b),
                "0".repeat(32)
            ),
            format!("used {fp} {domain} | macsec-xpn ssci {ssci_a} | /s/z.hw | {note}"),
        ]);
        assert_eq!(k.check_binding(domain, ssci_a).unwrap(), note);
        // Another SCI first used this SSCI under this key.
        let first = format!(
            "used {fp} {domain} | macsec-xpn ssci {ssci_a} | /s/first.hw | static sci {} ssci {ssci_a} key {tag}",
            sci_hex(b)
        );
        write(std::slice::from_ref(&first));
        let e = k.check_binding(domain, ssci_a).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
        let m = e.to_string();
        assert!(
            m.contains("first used under this key by SCI 02000000000b0001"),
            "{m}"
        );
        assert!(
            m.contains("/s/first.hw"),
            "the message names the first use: {m}"
        );
        // This SCI used the key under another SSCI.
        write(&[format!(
            "used {fp} {domain} | macsec-xpn ssci 7 | /s/old.hw | static sci {} ssci 7 key {tag}",
            sci_hex(a)
        )]);
        let m = k.check_binding(domain, ssci_a).unwrap_err().to_string();
        assert!(m.contains("first used this key under SSCI 7"), "{m}");
        assert!(m.contains("/s/old.hw"), "{m}");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
