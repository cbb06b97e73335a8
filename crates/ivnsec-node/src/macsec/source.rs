//! Where a SecY's keys come from (`macsec up`, `gateway`): static keys from a key file, MKA on
//! a pre-shared CAK, or MKA on the CAK of the vehicle's key server. [`open`] checks the settings
//! and builds the [`KeySource`] before anything is created on the interface; every one of them
//! reserves its transmit PNs in the nonce state of the state directory.

use std::path::PathBuf;

use anyhow::Result;
use ivnsec_core::profile::MacsecProfile;
use ivnsec_core::wire::ethernet::MacAddr;
use ivnsec_core::wire::macsec::Sci;
use ivnsec_crypto::ProviderChoice;

use super::KeySource;
use super::dot1x::{Dot1xKeys, Dot1xSettings, Role};
use super::keyserver::{KeyserverKeys, Params, Remote, fetch_initial};
use super::mka::{MkaKeys, MkaSettings};
use super::static_keys::StaticKeys;
use crate::error::usage;
use crate::keys::rxmark::Checkpoint;
use crate::keys::{psk, used_sak};

/// The key source's settings: where the keys come from, and the nonce state.
#[derive(Debug, Clone)]
pub struct KeySourceSettings {
    pub origin: KeyOrigin,
    /// The nonce state's directory; every source refuses to run without one.
    pub state_dir: Option<PathBuf>,
    /// PNs reserved per state write.
    pub reserve_block: u64,
}

/// Where the keys come from.
#[derive(Debug, Clone)]
pub enum KeyOrigin {
    /// One SAK for the whole CA from a key file (`--keys`).
    Static(StaticSettings),
    /// MKA with a pre-shared CAK (`--psk FILE`).
    Psk { file: PathBuf, mka: MkaSettings },
    /// MKA with the CAK of the key server (`--keyserver`).
    Keyserver {
        server: KeyserverSettings,
        mka: MkaSettings,
    },
    /// MKA with the CAKs of 802.1X (`--eap-tls`, `--authenticator`).
    Dot1x {
        dot1x: Dot1xSettings,
        mka: MkaSettings,
    },
}

/// Static keys: the key file, the peers by the MAC of their protected interface, the AN.
#[derive(Debug, Clone)]
pub struct StaticSettings {
    pub key_file: PathBuf,
    pub peers: Vec<[u8; 6]>,
    pub an: u8,
    /// Highest PN this key may carry.
    pub seq_limit: Option<u64>,
    /// `--i-know-this-key-is-new`.
    pub confirm_new_key: bool,
    /// How far the receive SAs' acceptance marks move ahead.
    pub rx_checkpoint: Checkpoint,
}

/// The key server and this member's credentials (mutual TLS 1.3).
#[derive(Debug, Clone)]
pub struct KeyserverSettings {
    /// host:port.
    pub addr: String,
    pub cert: PathBuf,
    pub key: PathBuf,
    pub ca: PathBuf,
    /// The segment whose CAK MKA runs on.
    pub segment: Option<String>,
    /// The name the key server's certificate must carry.
    pub server_name: String,
}

/// The key source of a SecY on `iface` (whose MAC makes this member's SCI).
pub fn open(
    s: &KeySourceSettings,
    iface: &str,
    provider: ProviderChoice,
    profile: MacsecProfile,
) -> Result<Box<dyn KeySource>> {
    match &s.origin {
        KeyOrigin::Static(st) => static_source(s, st, iface, profile),
        KeyOrigin::Psk { file, mka } => {
            let state_dir = mka_state_dir(s)?;
            let sci = sci_of(iface)?;
            let key = psk::load(file)?;
            Ok(Box::new(MkaKeys::new(
                profile,
                file.clone(),
                used_sak::record_path(file),
                &key,
                iface,
                sci,
                *mka,
                state_dir,
                s.reserve_block,
                provider,
            )?))
        }
        KeyOrigin::Keyserver { server, mka } => {
            let state_dir = mka_state_dir(s)?;
            let params = Params {
                profile,
                iface: iface.to_string(),
                sci: sci_of(iface)?,
                settings: *mka,
                state_dir,
                reserve_block: s.reserve_block,
                provider,
                sak_record: used_sak::record_path(&server.key),
            };
            keyserver_source(server, params)
        }
        KeyOrigin::Dot1x { dot1x, mka } => {
            let state_dir = mka_state_dir(s)?;
            let (mac, _) = super::iface_facts(iface)?;
            let record_beside = match &dot1x.role {
                Role::Supplicant(sup) => sup.tls.key.clone(),
                Role::Authenticator(a) => a.secret.clone(),
            };
            let params = Params {
                profile,
                iface: iface.to_string(),
                sci: Sci::end_station(MacAddr(mac)),
                settings: *mka,
                state_dir,
                reserve_block: s.reserve_block,
                provider,
                sak_record: used_sak::record_path(&record_beside),
            };
            Ok(Box::new(Dot1xKeys::new(dot1x, params, mac)?))
        }
    }
}

/// This member's SCI: the MAC of `iface` ‖ 0001.
fn sci_of(iface: &str) -> Result<Sci> {
    let (mac, _) = super::iface_facts(iface)?;
    Ok(Sci::end_station(MacAddr(mac)))
}

/// The state directory MKA needs.
fn mka_state_dir(s: &KeySourceSettings) -> Result<PathBuf> {
    s.state_dir.clone().ok_or_else(|| {
        usage(
            "refusing to run MKA without --state-dir: a member restarted while the CA still \
             uses the SAK it transmitted under may be handed that SAK again, and counting PNs \
             from 1 would reuse (key, nonce) pairs, which breaks GCM. Give --state-dir DIR (a \
             persistent directory for the reserved PNs of every SAK)",
        )
    })
}

/// MKA on the CAK of the key server: fetched once now (refusals and an unreachable server stop
/// here), then watched.
fn keyserver_source(server: &KeyserverSettings, params: Params) -> Result<Box<dyn KeySource>> {
    if let Some(s) = &server.segment {
        crate::pki::check_ecu_name(s).map_err(|e| usage(format!("--segment: {e:#}")))?;
    }
    let tls = crate::pki::keyserver::client_tls(&server.ca, &server.cert, &server.key)?;
    let remote = Remote {
        addr: server.addr.clone(),
        server_name: server.server_name.clone(),
        tls,
        segment: server.segment.clone(),
    };
    let first = fetch_initial(&remote)?;
    eprintln!(
        "macsec: CAK number {} of segment {} (CKN {}) from the key server {}",
        first.key.number,
        first.segment,
        hex::encode(&first.key.ckn),
        server.addr
    );
    Ok(Box::new(KeyserverKeys::new(remote, params, first)?))
}

/// Static keys from the key file.
fn static_source(
    s: &KeySourceSettings,
    st: &StaticSettings,
    iface: &str,
    profile: MacsecProfile,
) -> Result<Box<dyn KeySource>> {
    let Some(state_dir) = s.state_dir.clone() else {
        return Err(usage(format!(
            "refusing to send under the long-term key in {} without --state-dir: the MACsec \
             nonce is derived from the PN, and an instance that restarts (crash, reboot, kill) \
             would count from 1 again and reuse (key, nonce) pairs, which breaks GCM. Give \
             --state-dir DIR (a persistent directory for the reserved PNs)",
            st.key_file.display()
        )));
    };
    if st.an > 3 {
        return Err(usage(format!("--an must be 0, 1, 2 or 3, got {}", st.an)));
    }
    let peers = st
        .peers
        .iter()
        .map(|m| Sci::end_station(MacAddr(*m)))
        .collect();
    let mut keys = StaticKeys::new(
        profile,
        st.key_file.clone(),
        sci_of(iface)?,
        peers,
        st.an,
        state_dir,
        s.reserve_block,
        st.seq_limit,
        st.confirm_new_key,
    )?;
    keys.rx_checkpoint = st.rx_checkpoint;
    Ok(Box::new(keys))
}
