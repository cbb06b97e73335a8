//! A plan's `[[crypto_bench]]` table (docs/plans.md): `crypto-bench --frames N` in the plan's
//! process — protect and verify of single frames, each timed on its own, min / mean / max — for
//! seed 001 Figure 6, which reports the largest HMAC time of a frame (plans/seed001.toml).
//!
//! The batches that `crypto-bench` always runs are kept short (its `--quick` timing); the
//! one-by-one frames are what the report shows.

use anyhow::Result;
use ivnsec_core::profile::{NamedProfile, Profile};
use ivnsec_crypto::ProviderChoice;
use serde::{Deserialize, Serialize};

use super::{Bench, MAX_FRAMES, MAX_SIZE, Providers, Settings};
use ivnsec_node::error::KeyError;

/// Most `profiles` and `sizes` each.
pub const MAX_LIST: usize = 32;

/// One `[[crypto_bench]]` table as the plan file gives it (every key optional).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PerFrameConfig {
    /// Profiles as `crypto-bench --suite` takes them; typed where the plan is read: an unknown
    /// profile is a TOML error naming its key (`crypto_bench[0].profiles[1]`,
    /// [`crate::experiment::text::key_at`]).
    #[serde(default = "default_profiles")]
    pub profiles: Vec<NamedProfile>,
    /// Payload bytes.
    #[serde(default = "default_sizes")]
    pub sizes: Vec<usize>,
    /// Frames protected and verified one by one per profile × size.
    #[serde(default = "default_frames")]
    pub frames: u32,
    #[serde(default = "default_provider")]
    pub provider: String,
}

fn default_profiles() -> Vec<NamedProfile> {
    ["hmac-sha1", "hmac-sha256", "hmac-sha3-256"]
        .map(|p| p.parse().expect("the default profiles are profiles"))
        .into()
}
fn default_sizes() -> Vec<usize> {
    vec![60, 80]
}
fn default_frames() -> u32 {
    10_000
}
fn default_provider() -> String {
    "auto".into()
}

impl Default for PerFrameConfig {
    /// Seed 001 Figure 6: HMAC-SHA1, SHA-256 and SHA3-256 at 60 and 80 bytes, 10,000 frames.
    fn default() -> Self {
        PerFrameConfig {
            profiles: default_profiles(),
            sizes: default_sizes(),
            frames: default_frames(),
            provider: default_provider(),
        }
    }
}

impl PerFrameConfig {
    /// Checks every key; the error names the key and says how to fix the value.
    pub fn check(&self) -> Result<(), KeyError> {
        let provider: ProviderChoice = self
            .provider
            .parse()
            .map_err(|e: String| KeyError::new("provider", e))?;
        for (key, len) in [
            ("profiles", self.profiles.len()),
            ("sizes", self.sizes.len()),
        ] {
            if len == 0 || len > MAX_LIST {
                return Err(KeyError::new(
                    key,
                    format!("give 1 to {MAX_LIST} values, not {len}"),
                ));
            }
        }
        for (j, &s) in self.sizes.iter().enumerate() {
            if s == 0 || s > MAX_SIZE {
                return Err(KeyError::new(
                    format!("sizes[{j}]"),
                    format!("{s}: payload sizes are 1 to {MAX_SIZE} bytes"),
                ));
            }
        }
        if self.frames == 0 || self.frames > MAX_FRAMES {
            return Err(KeyError::new(
                "frames",
                format!(
                    "give 1 to {MAX_FRAMES} frames timed one by one, got {}",
                    self.frames
                ),
            ));
        }
        for (j, named) in self.profiles.iter().enumerate() {
            let key = format!("profiles[{j}]");
            let name = named.name();
            if matches!(named.profile(), Profile::Someip(_)) {
                return Err(KeyError::new(
                    key,
                    format!(
                        "`{name}`: crypto-bench measures IVN-AE, MACsec, ESP and SecOC profiles"
                    ),
                ));
            }
            let one = Settings {
                suites: vec![name.to_string()],
                ..self.settings(provider)
            };
            Bench::new(&one).map_err(|e| KeyError::new(&key, format!("{e:#}")))?;
        }
        Ok(())
    }

    fn settings(&self, provider: ProviderChoice) -> Settings {
        Settings {
            suites: self.profiles.iter().map(|p| p.name().to_string()).collect(),
            sizes: self.sizes.clone(),
            providers: Providers::One(provider),
            quick: true,
            batches: None,
            batch_ms: None,
            vs_openssl: false,
            openssl_seconds: 1,
            frames: self.frames,
        }
    }
}

/// One profile × size (`experiments.crypto_bench[].rows`), ns per frame.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PerFrameRow {
    /// The profile measured, named canonically (as `crypto-bench` names its rows).
    pub profile: NamedProfile,
    pub provider: String,
    /// Payload bytes.
    pub size: usize,
    pub protected_frame_len: usize,
    pub protect_frame_ns_min: f64,
    pub protect_frame_ns_mean: f64,
    pub protect_frame_ns_max: f64,
    pub verify_frame_ns_min: f64,
    pub verify_frame_ns_mean: f64,
    pub verify_frame_ns_max: f64,
}

/// What a `[[crypto_bench]]` table measured (`experiments.crypto_bench[]` of summary.json).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PerFrameReport {
    /// Frames timed one by one per row.
    pub frames: usize,
    /// What an empty timing (two clock readings, included once in every figure) costs, ns.
    pub timer_ns: Option<f64>,
    pub rows: Vec<PerFrameRow>,
}

/// Measures every profile × size (checked with [`PerFrameConfig::check`] first).
pub fn run(cfg: &PerFrameConfig) -> Result<PerFrameReport> {
    let provider: ProviderChoice = cfg.provider.parse().map_err(ivnsec_node::error::usage)?;
    let mut bench = Bench::new(&cfg.settings(provider))?;
    let rows = bench.run(&mut |r| {
        eprintln!(
            "ivnsec run: crypto-bench {}@{} on {}: {} frames one by one",
            r.profile, r.size, r.provider, cfg.frames
        );
        Ok(())
    })?;
    let meta = bench.meta();
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        let figures = [
            r.protect_frame_ns_min,
            r.protect_frame_ns_mean,
            r.protect_frame_ns_max,
            r.verify_frame_ns_min,
            r.verify_frame_ns_mean,
            r.verify_frame_ns_max,
        ];
        let Some([pmin, pmean, pmax, vmin, vmean, vmax]) = figures
            .iter()
            .copied()
            .collect::<Option<Vec<f64>>>()
            .and_then(|v| <[f64; 6]>::try_from(v).ok())
        else {
            anyhow::bail!("{}@{}: no single-frame figures", r.profile, r.size);
        };
        out.push(PerFrameRow {
            profile: r.profile,
            provider: r.provider.to_string(),
            size: r.size,
            protected_frame_len: r.protected_frame_len,
            protect_frame_ns_min: pmin,
            protect_frame_ns_mean: pmean,
            protect_frame_ns_max: pmax,
            verify_frame_ns_min: vmin,
            verify_frame_ns_mean: vmean,
            verify_frame_ns_max: vmax,
        });
    }
    Ok(PerFrameReport {
        frames: meta.frames,
        timer_ns: meta.timer_ns,
        rows: out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(text: &str) -> PerFrameConfig {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn bad_values_name_the_key() {
        PerFrameConfig::default().check().unwrap();
        for (text, key, why) in [
            ("profiles = []\n", "profiles", "1 to 32"),
            (
                "profiles = [\"someip-aes128-gcm/auth\"]\n",
                "profiles[0]",
                "crypto-bench measures",
            ),
            ("sizes = [0]\n", "sizes[0]", "1 to 65535"),
            ("frames = 0\n", "frames", "1 to 1000000"),
            ("provider = \"quick\"\n", "provider", "quick"),
            (
                "profiles = [\"aes128-ccm\"]\nprovider = \"fast\"\n",
                "profiles[0]",
                "does not implement",
            ),
        ] {
            let e = cfg(text).check().unwrap_err();
            assert_eq!(e.key, key, "{text}: {e:?}");
            assert!(e.why.contains(why), "{text}: {e:?}");
        }
        assert!(toml::from_str::<PerFrameConfig>("frame = 3\n").is_err());
    }

    /// `profiles` is typed where the table is read: an unknown profile fails there, the error
    /// on the profile itself (its key `profiles[0]` for the plan's message); known ones are the
    /// typed profiles under the names the table spells.
    #[test]
    fn profiles_are_typed_when_read() {
        let text = "profiles = [\"nope\", \"hmac-sha1\"]\n";
        let e = toml::from_str::<PerFrameConfig>(text).unwrap_err();
        assert_eq!(
            crate::experiment::text::toml_error(&e, text),
            "line 1, column 13: key `profiles[0]`: profile `nope`: unknown suite (see \
             `ivnsec suites`)\n  | profiles = [\"nope\", \"hmac-sha1\"]"
        );
        let c = cfg("profiles = [\"hmac-sha1\", \"aes128-gcm/auth\"]\n");
        let typed: Vec<NamedProfile> = ["hmac-sha1", "aes128-gcm/auth"]
            .map(|p| p.parse().unwrap())
            .into();
        assert_eq!(c.profiles, typed);
        c.check().unwrap();
        assert_eq!(
            c.settings(ProviderChoice::Portable).suites,
            ["hmac-sha1", "aes128-gcm/auth"]
        );
    }

    /// A few frames: every row has min ≤ mean ≤ max, and the HMAC-SHA1 frame of a 60-byte
    /// payload is 14 + 12 + 2 + 60 + the 20-byte tag (docs/wire-ivnae.md).
    #[test]
    fn rows_have_min_mean_max() {
        let r = run(&cfg(
            "profiles = [\"hmac-sha1\"]\nsizes = [60]\nframes = 20\nprovider = \"portable\"\n",
        ))
        .unwrap();
        assert_eq!(r.frames, 20);
        assert_eq!(r.rows.len(), 1);
        let x = &r.rows[0];
        assert_eq!(
            (x.profile.name(), x.size, x.protected_frame_len),
            ("hmac-sha1", 60, 108)
        );
        assert!(0.0 < x.protect_frame_ns_min && x.protect_frame_ns_min <= x.protect_frame_ns_mean);
        assert!(x.protect_frame_ns_mean <= x.protect_frame_ns_max);
        assert!(0.0 < x.verify_frame_ns_min && x.verify_frame_ns_mean <= x.verify_frame_ns_max);
    }
}
