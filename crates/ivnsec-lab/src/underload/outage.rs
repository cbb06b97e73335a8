//! `underload --outage`: the sensor stream (seed 002's lidar messages, 950/s by default) from
//! `sensor1` to the consumer of a fresh `production` testbed while links go down and come back.
//! The outages, the spanning tree and the MKA participants are [`crate::outage`]'s, as for the
//! ping-pong; the units are the sensor's messages and their latency the one-way delay
//! ([`Measure::OneWay`]): per outage event the messages lost, the time to recover, the tree's
//! settling time and the one-way delays while the network re-converged.

use anyhow::Result;

use super::run::{UnderloadConfig, run_traced};
use crate::outage::run::{OutageReport, run_with};
use crate::outage::{Measure, OutageSpec};
use ivnsec_core::profile::{NamedProfile, Profile};
use ivnsec_node::error::usage;

/// The run's profiles in order: `plain` first (the reference every protection is read
/// against), then the configuration's others.
pub fn profiles(cfg: &UnderloadConfig) -> Vec<NamedProfile> {
    let mut v = vec![NamedProfile::from(Profile::PLAIN)];
    v.extend(cfg.profiles.iter().filter(|p| *p != "plain").cloned());
    v
}

/// Runs every profile of `cfg` (plain first) with the outages of `spec`, each for the whole
/// outage schedule ([`OutageSpec::duration_s`]; `cfg.seconds` is set from it).
pub fn run_underload_outage(cfg: &UnderloadConfig, spec: &OutageSpec) -> Result<OutageReport> {
    let mut cfg = cfg.clone();
    cfg.seconds = spec.duration_s();
    cfg.profiles = profiles(&cfg);
    cfg.baseline = false;
    cfg.check().map_err(|e| {
        usage(format!(
            "with --outage {} (each profile sends for {} s): {e:#}",
            spec.count, cfg.seconds
        ))
    })?;
    run_with(
        "underload",
        &cfg.profiles,
        spec,
        Measure::OneWay,
        &|site, k| Ok(run_traced(site, &cfg, &cfg.profiles[k])?.1),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_comes_first_once() {
        let cfg = |p: &[&str]| UnderloadConfig {
            profiles: p.iter().map(|s| s.parse().unwrap()).collect(),
            ..UnderloadConfig::default()
        };
        assert_eq!(profiles(&cfg(&["aes128-gcm"])), ["plain", "aes128-gcm"]);
        assert_eq!(
            profiles(&cfg(&["macsec-gcm-aes-128", "plain"])),
            ["plain", "macsec-gcm-aes-128"]
        );
        assert_eq!(profiles(&cfg(&["plain"])), ["plain"]);
    }
}
