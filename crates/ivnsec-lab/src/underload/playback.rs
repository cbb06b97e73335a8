//! The playback settings and timelines of seed 002's sockperf *playback* test (§5.2.1): the sensor
//! sends messages at the times and sizes of a recorded timeline instead of a steady rate;
//! everything else (the roles, fragments, one-way delays, replies, verdict, CPU, baselines) is
//! the under-load engine's (`run_stream` in [`super::run`]).
//!
//! A timeline is sockperf's own playback file (`<seconds>, <bytes>` per line, `#` comments), so
//! the same file drives `sockperf playback` in the same run, or a classic pcap capture (one
//! message per frame: the frame's time after the first frame, and its original length).

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Result, anyhow};
use ivnsec_net::pcap::{PcapError, PcapErrorKind, PcapReader};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::node::Schedule;
use super::run::{
    Common, MAX_COUNT, check_common, default_profiles, run_stream, sockperf_baseline,
};
use super::{
    MAX_ENTRIES, MAX_MESSAGE, MIN_MESSAGE, REQUIREMENT_US, TimelineEntry, UnderloadReport,
    parse_sockperf_csv, to_sockperf_csv,
};
use crate::site::Site;
use ivnsec_core::profile::NamedProfile;
use ivnsec_node::error::usage;

/// The settings of a playback run, as the command line and plan sections give them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlaybackConfig {
    /// Profiles, run in this order (`plain` first is added when missing and `baseline` is on).
    /// Typed where the plan is read: an unknown profile is a TOML error naming its key
    /// (`playback[0].profiles[1]`, [`crate::experiment::text::key_at`]); the command line
    /// parses its own (`--profile`).
    #[serde(default = "default_profiles")]
    pub profiles: Vec<NamedProfile>,
    /// The timeline file: sockperf playback CSV or classic pcap.
    pub timeline: PathBuf,
    /// Reply to every n-th message.
    #[serde(default = "default_reply_every")]
    pub reply_every: u64,
    /// p99.9 of the one-way delay must be below this, µs.
    #[serde(default = "default_requirement")]
    pub requirement_us: f64,
    /// `portable`, `fast` or `auto`.
    #[serde(default = "default_provider")]
    pub provider: String,
    /// Run `plain` and sockperf in the same invocation.
    #[serde(default = "default_true")]
    pub baseline: bool,
    /// In a plan: `bump` or `bump2` runs on a testbed of its own through bump-in-the-wire
    /// gateways the run starts (as `[[underload]]`'s `topology`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<String>,
}

fn default_reply_every() -> u64 {
    100
}
fn default_requirement() -> f64 {
    REQUIREMENT_US
}
fn default_provider() -> String {
    "auto".into()
}
fn default_true() -> bool {
    true
}

impl PlaybackConfig {
    /// A config with the defaults for everything but the timeline.
    pub fn new(timeline: impl Into<PathBuf>) -> PlaybackConfig {
        PlaybackConfig {
            profiles: default_profiles(),
            timeline: timeline.into(),
            reply_every: default_reply_every(),
            requirement_us: default_requirement(),
            provider: default_provider(),
            baseline: true,
            topology: None,
        }
    }

    /// Checks every setting and reads the timeline; the error is a usage error (exit 2) naming
    /// the setting, or the file and line.
    pub fn check(&self) -> Result<()> {
        self.load().map(|_| ())
    }

    /// Checks the settings but the timeline (a preset's built-in one is written out only when
    /// the plan runs).
    pub fn check_settings(&self) -> Result<()> {
        check_common(
            &self.profiles,
            self.reply_every,
            self.requirement_us,
            &self.provider,
        )
    }

    /// Checks the settings and returns the timeline.
    pub fn load(&self) -> Result<Timeline> {
        self.check_settings()?;
        let t = Timeline::load(&self.timeline)?;
        if t.entries.len() as u64 > MAX_COUNT {
            return Err(usage(format!(
                "{}: {} messages; at most {MAX_COUNT}",
                self.timeline.display(),
                t.entries.len()
            )));
        }
        Ok(t)
    }
}

/// Where a timeline came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TimelineFormat {
    SockperfCsv,
    Pcap,
}

/// A loaded timeline.
#[derive(Clone, Debug)]
pub struct Timeline {
    pub format: TimelineFormat,
    pub entries: Vec<TimelineEntry>,
}

impl Timeline {
    /// Reads a sockperf playback CSV or a classic pcap (by its first four bytes).
    pub fn load(path: &Path) -> Result<Timeline> {
        let mut f = std::fs::File::open(path)
            .map_err(|e| usage(format!("cannot read the timeline {}: {e}", path.display())))?;
        let mut head = [0u8; 4];
        let n = read_up_to(&mut f, &mut head)
            .map_err(|e| usage(format!("cannot read the timeline {}: {e}", path.display())))?;
        let magic = u32::from_le_bytes(head);
        let pcap_magics = [0xA1B2_C3D4u32, 0xA1B2_3C4D, 0x0A0D_0D0A];
        if n == 4 && (pcap_magics.contains(&magic) || pcap_magics.contains(&magic.swap_bytes())) {
            return Ok(Timeline {
                format: TimelineFormat::Pcap,
                entries: pcap_timeline(path)?,
            });
        }
        let text = std::fs::read_to_string(path).map_err(|e| {
            usage(format!(
                "{}: neither a pcap capture nor a text playback file: {e}",
                path.display()
            ))
        })?;
        let entries =
            parse_sockperf_csv(&text).map_err(|e| usage(format!("{}: {e}", path.display())))?;
        Ok(Timeline {
            format: TimelineFormat::SockperfCsv,
            entries,
        })
    }

    /// Span from the first message to the last, s.
    pub fn seconds(&self) -> f64 {
        match (self.entries.first(), self.entries.last()) {
            (Some(a), Some(b)) => (b.at_ns - a.at_ns) as f64 / 1e9,
            _ => 0.0,
        }
    }

    pub fn max_size(&self) -> usize {
        self.entries.iter().map(|e| e.size).max().unwrap_or(0)
    }
}

fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// One message per frame: its time after the first frame, its original length.
fn pcap_timeline(path: &Path) -> Result<Vec<TimelineEntry>> {
    let bad = |e: PcapError| usage(format!("{}: {e}", path.display()));
    let mut r = PcapReader::open(path).map_err(|e| match e.kind {
        PcapErrorKind::Io(ref io) => usage(format!("cannot read {}: {io}", path.display())),
        _ => bad(e),
    })?;
    let mut out = Vec::new();
    let mut first = None;
    while let Some(rec) = r.next_record() {
        let rec = match rec {
            Ok(rec) => rec,
            // A writer killed mid-record leaves a cut last record: the timeline is every whole
            // record before it (said on stderr), not an error.
            Err(e) if e.is_truncation() => {
                eprintln!(
                    "ivnsec playback: {}: {e}: the capture ends inside this record; the timeline \
                     is the {} records before it",
                    path.display(),
                    out.len()
                );
                break;
            }
            Err(e) => return Err(bad(e)),
        };
        let t0 = *first.get_or_insert(rec.timestamp);
        let at = rec.timestamp.duration_since(t0).map_err(|_| {
            usage(format!(
                "{}: record {} is earlier than the first record (a capture must be in time order)",
                path.display(),
                rec.number
            ))
        })?;
        let size = rec.orig_len as usize;
        if size > MAX_MESSAGE {
            return Err(usage(format!(
                "{}: record {}: a {size}-byte frame is larger than the {MAX_MESSAGE}-byte limit",
                path.display(),
                rec.number
            )));
        }
        if out.len() == MAX_ENTRIES {
            return Err(usage(format!(
                "{}: more than {MAX_ENTRIES} records",
                path.display()
            )));
        }
        out.push(TimelineEntry {
            at_ns: u64::try_from(at.as_nanos()).unwrap_or(u64::MAX),
            size,
        });
    }
    if out.is_empty() {
        return Err(usage(format!(
            "{}: the capture has no frames",
            path.display()
        )));
    }
    Ok(out)
}

/// Removes the file when dropped.
struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Runs a playback experiment at `site`. With `pcap`, each profile's sensor records its first
/// units (as [`super::run::run_underload`]).
pub fn run_playback(
    site: &Site,
    cfg: &PlaybackConfig,
    pcap: Option<&Path>,
) -> Result<UnderloadReport> {
    let t = cfg.load()?;
    // Both our sensor and sockperf read the timeline as a playback CSV (a pcap is converted).
    let (csv, adjusted) = to_sockperf_csv(
        &t.entries,
        &format!("ivnsec playback timeline from {}", cfg.timeline.display()),
    );
    let rnd = ivnsec_net::testbed::random_prefix().map_err(|e| anyhow!("{e}"))?;
    let file = TempFile(std::env::temp_dir().join(format!("ivnsec-timeline-{rnd}.csv")));
    std::fs::write(&file.0, csv).map_err(|e| anyhow!("writing {}: {e}", file.0.display()))?;
    let max_size = t.max_size().max(MIN_MESSAGE);
    let schedule = Schedule::Timeline {
        file: file.0.clone(),
        count: t.entries.len() as u64,
        max_size,
    };
    let mut settings = serde_json::to_value(cfg)?;
    if let serde_json::Value::Object(m) = &mut settings {
        m.insert(
            "timeline_stats".into(),
            json!({
                "format": t.format,
                "messages": t.entries.len(),
                "seconds": t.seconds(),
                "max_size": t.max_size(),
                "min_size": t.entries.iter().map(|e| e.size).min(),
                "mean_mps": if t.seconds() > 0.0 { Some(t.entries.len() as f64 / t.seconds()) } else { None },
                "padded_to_16_bytes": t.entries.iter().filter(|e| e.size < MIN_MESSAGE).count(),
                "adjusted_for_sockperf": adjusted,
            }),
        );
    }
    let common = Common {
        experiment: "playback",
        profiles: cfg.profiles.clone(),
        reply_every: cfg.reply_every,
        requirement_us: cfg.requirement_us,
        provider: cfg.provider.parse().unwrap_or_default(),
        baseline: cfg.baseline,
    };
    let path = file.0.to_string_lossy().into_owned();
    let sockperf = |pair: &_| {
        let args = vec![
            "playback".to_string(),
            "--data-file".into(),
            path.clone(),
            "--reply-every".into(),
            cfg.reply_every.to_string(),
        ];
        sockperf_baseline(site, pair, &args)
    };
    run_stream(site, &common, &schedule, settings, pcap, &sockperf)
}

/// Tells a `[[playback]]` table's results from an `[[underload]]` table's: both are
/// [`UnderloadReport`](super::UnderloadReport)s (see [`crate::experiment::Holds`]).
pub struct Playback;

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    fn tmp(name: &str) -> PathBuf {
        let r = ivnsec_net::testbed::random_prefix().unwrap();
        std::env::temp_dir().join(format!("ivnsec-pb-{r}-{name}"))
    }

    #[test]
    fn csv_and_pcap_timelines() {
        let csv = tmp("t.csv");
        std::fs::write(&csv, "# lidar\n0.001, 24938\n0.002052, 24938\n").unwrap();
        let t = Timeline::load(&csv).unwrap();
        assert_eq!(t.format, TimelineFormat::SockperfCsv);
        assert_eq!(t.entries.len(), 2);
        assert!((t.seconds() - 0.001052).abs() < 1e-12);

        // A capture written by our pcap writer: sizes are the frames' lengths, times relative.
        let cap = tmp("t.pcap");
        let mut w = ivnsec_net::pcap::PcapWriter::create(&cap).unwrap();
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        w.write_frame(t0, &[0u8; 60]).unwrap();
        w.write_frame(t0 + Duration::from_micros(1500), &[0u8; 1514])
            .unwrap();
        w.flush().unwrap();
        drop(w);
        let t = Timeline::load(&cap).unwrap();
        assert_eq!(t.format, TimelineFormat::Pcap);
        assert_eq!(
            t.entries,
            vec![
                TimelineEntry { at_ns: 0, size: 60 },
                TimelineEntry {
                    at_ns: 1_500_000,
                    size: 1514
                }
            ]
        );
        let _ = std::fs::remove_file(&csv);
        let _ = std::fs::remove_file(&cap);
    }

    #[test]
    fn bad_timelines_are_usage_errors() {
        let f = tmp("bad.csv");
        std::fs::write(&f, "0.1, 100\n0.05, 100\n").unwrap();
        let e = Timeline::load(&f).unwrap_err();
        assert_eq!(ivnsec_node::error::exit_code(&e), 2);
        assert!(e.to_string().contains("line 2"), "{e}");
        // A capture cut inside its last record (a writer killed mid-record): the timeline is
        // the whole records before it; cut inside its only record, it has no frames.
        let cap = tmp("cut.pcap");
        let mut w = ivnsec_net::pcap::PcapWriter::create(&cap).unwrap();
        w.write_frame(SystemTime::UNIX_EPOCH, &[1u8; 100]).unwrap();
        w.write_frame(
            SystemTime::UNIX_EPOCH + Duration::from_millis(1),
            &[1u8; 200],
        )
        .unwrap();
        w.flush().unwrap();
        drop(w);
        let bytes = std::fs::read(&cap).unwrap();
        std::fs::write(&cap, &bytes[..bytes.len() - 10]).unwrap();
        let t = Timeline::load(&cap).unwrap();
        assert_eq!(
            t.entries,
            vec![TimelineEntry {
                at_ns: 0,
                size: 100
            }]
        );
        std::fs::write(&cap, &bytes[..24 + 16 + 90]).unwrap();
        let e = Timeline::load(&cap).unwrap_err();
        assert_eq!(ivnsec_node::error::exit_code(&e), 2);
        assert!(e.to_string().contains("no frames"), "{e}");
        let e = Timeline::load(&tmp("missing.csv")).unwrap_err();
        assert_eq!(ivnsec_node::error::exit_code(&e), 2);
        // Binary that is no pcap.
        std::fs::write(&f, [0xffu8, 0xfe, 0, 1, 2]).unwrap();
        assert_eq!(
            ivnsec_node::error::exit_code(&Timeline::load(&f).unwrap_err()),
            2
        );
        let _ = std::fs::remove_file(&f);
        let _ = std::fs::remove_file(&cap);
    }

    #[test]
    fn config_from_toml() {
        let c: PlaybackConfig =
            toml::from_str("timeline = \"x.csv\"\nprofiles = [\"aes128-gcm\"]").unwrap();
        assert_eq!(c.reply_every, 100);
        assert!(c.baseline);
        assert!(toml::from_str::<PlaybackConfig>("profiles = [\"plain\"]").is_err());
        assert!(toml::from_str::<PlaybackConfig>("timeline = \"x\"\nsize = 3").is_err());
        let c: PlaybackConfig = toml::from_str("timeline = \"x.csv\"").unwrap();
        assert_eq!(c, PlaybackConfig::new("x.csv"));
    }

    /// `profiles` is typed where the table is read: an unknown profile fails there, the error
    /// on the profile itself (its key `profiles[0]` for the plan's message); known ones are the
    /// typed profiles under the names the table spells.
    #[test]
    fn profiles_are_typed_when_read() {
        let text = "timeline = \"x.csv\"\nprofiles = [\"nope\", \"plain\"]\n";
        let e = toml::from_str::<PlaybackConfig>(text).unwrap_err();
        assert_eq!(
            crate::experiment::text::toml_error(&e, text),
            "line 2, column 13: key `profiles[0]`: profile `nope`: unknown suite (see \
             `ivnsec suites`)\n  | profiles = [\"nope\", \"plain\"]"
        );
        let c: PlaybackConfig =
            toml::from_str("timeline = \"x.csv\"\nprofiles = [\"macsec-gcm-aes-128/auth\"]\n")
                .unwrap();
        let want: NamedProfile = "macsec-gcm-aes-128/auth".parse().unwrap();
        assert_eq!(c.profiles, [want]);
        assert_eq!(c.profiles[0].name(), "macsec-gcm-aes-128/auth");
    }
}
