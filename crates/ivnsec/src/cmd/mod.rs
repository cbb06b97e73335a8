//! One module per subcommand, each with a `run()`; what several of them share (option groups,
//! the stop flag, shared printing) is [`common`], the one module a command module imports from
//! beside this one.

use ivnsec_core::profile::{NamedProfile, ProfileError};

pub mod attack;
pub mod camera;
pub mod clock;
pub mod common;
pub mod crypto_bench;
pub mod dist;
pub mod esp;
pub mod frame;
pub mod gateway;
pub mod hosts;
pub mod keygen;
pub mod macsec;
pub mod node;
pub mod pcap;
pub mod pingpong;
pub mod pki;
pub mod playback;
pub mod receive;
pub mod report;
pub mod run;
pub mod send;
pub mod someip;
pub mod suites;
pub mod tdma;
pub mod testbed;
pub mod throughput;
pub mod tls_bench;
pub mod underload;
pub mod validate;

/// A `--profile` name that is no profile: the sentence the command prints for it (`ivnsec:
/// SENTENCE`, exit 2), found by [`crate::cli::parse`] behind clap's error.
#[derive(Debug)]
pub struct ProfileArgError(pub String);

impl std::fmt::Display for ProfileArgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ProfileArgError {}

/// The parser of every profile argument: the typed profile, parsed here at the edge, with the
/// name as given (reports echo it); a name that is no profile is a usage error in the words of
/// [`ProfileError`](ivnsec_core::profile::ProfileError).
pub fn profile_arg(name: &str) -> Result<NamedProfile, ProfileArgError> {
    name.parse()
        .map_err(|e: ProfileError| ProfileArgError(e.to_string()))
}

/// The parser of `frame protect|verify --profile`: as [`profile_arg`], a name that is no
/// profile worded as the frame tools word each family's
/// ([`ivnsec_node::frames::material::profile_error`]).
pub fn frame_profile_arg(name: &str) -> Result<NamedProfile, ProfileArgError> {
    name.parse()
        .map_err(|e| ProfileArgError(ivnsec_node::frames::material::profile_error(&e, true)))
}

/// The parser of `pcap verify --profile` (which takes no SecOC).
pub fn capture_profile_arg(name: &str) -> Result<NamedProfile, ProfileArgError> {
    name.parse()
        .map_err(|e| ProfileArgError(ivnsec_node::frames::material::profile_error(&e, false)))
}

/// The parser of every `--replay-window`: 0 to the largest window the replay check keeps
/// ([`ivnsec_core::sa::replay::MAX_WINDOW`]), so an error names the real range.
pub fn replay_window_parser() -> clap::builder::RangedI64ValueParser<u32> {
    clap::value_parser!(u32).range(0..=i64::from(ivnsec_core::sa::replay::MAX_WINDOW))
}
