//! The secured channel as experiments open it: the profile's provider chosen once
//! ([`ivnsec_crypto::select`]), errors as usage errors (exit 2).

use std::net::Ipv4Addr;

use anyhow::Result;
use ivnsec_core::channel::{Channel, ChannelOptions, DirectionKeys, Ends};
use ivnsec_core::crypto::CryptoProvider;
use ivnsec_core::profile::Profile;
use ivnsec_crypto::ProviderChoice;

use crate::error::usage;

/// The provider for `profile` under `choice`; the error is a usage error.
pub fn provider(choice: ProviderChoice, profile: Profile) -> Result<&'static CryptoProvider> {
    ivnsec_crypto::select(choice, profile).map_err(|e| usage(e.to_string()))
}

/// This node's end of a channel (see [`Channel::with_options`]).
pub fn open(
    profile: Profile,
    choice: ProviderChoice,
    tx: &DirectionKeys,
    rx: &DirectionKeys,
    ends: Ends,
    direction: usize,
    opts: ChannelOptions,
) -> Result<Channel> {
    let prov = provider(choice, profile)?;
    Channel::with_options(profile, prov, tx, rx, ends, direction, opts)
        .map_err(|e| usage(e.to_string()))
}

/// Fresh random keys for `profile` (from the system's generator, through the portable
/// provider).
pub fn random_keys(profile: Profile) -> Result<DirectionKeys> {
    DirectionKeys::random(profile, ivnsec_crypto::PORTABLE.rng).map_err(|e| anyhow::anyhow!("{e}"))
}

/// The frame length of `payload` under `profile` (built with throw-away keys; nothing is sent).
pub fn frame_bytes(profile: Profile, choice: ProviderChoice, payload: usize) -> Result<usize> {
    let k = random_keys(profile)?;
    let ends = Ends {
        local_mac: [2, 0, 0, 0, 0, 1],
        peer_mac: [2, 0, 0, 0, 0, 2],
        local_ip: Ipv4Addr::LOCALHOST,
        peer_ip: Ipv4Addr::LOCALHOST,
    };
    Ok(open(profile, choice, &k, &k, ends, 0, ChannelOptions::default())?.frame_bytes(payload))
}
