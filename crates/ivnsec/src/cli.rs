//! Command-line definitions and the exit-code convention:
//! 0 success, 1 a verification or verdict failed, 2 usage or configuration error,
//! 3 environment problem (missing privilege or tool), 128 + signal when interrupted; the
//! README's exit-code table is the reference.

use clap::{Parser, Subcommand};

use crate::cmd;

#[derive(Parser, Debug)]
#[command(
    name = "ivnsec",
    version,
    about = "Protect in-vehicle Ethernet messages and prove the protection meets safety timing",
    long_about = "ivnsec protects in-vehicle Ethernet frames (IVN-AE, our authenticated raw-Ethernet \
format, with every cipher suite of the source studies) and measures what the protection costs.\n\n\
Exit codes: 0 success, 1 a verification or verdict failed, 2 usage or configuration error, \
3 environment problem (missing privilege or tool, an address that cannot be bound), 130/143 \
interrupted by SIGINT/SIGTERM (128 + the signal). The README's table has the details."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Protect or verify single frames (hex on the command line or one per line on stdin).
    #[command(subcommand)]
    Frame(cmd::frame::Args),
    /// Check the frames of a pcap capture offline (`pcap verify`).
    #[command(subcommand)]
    Pcap(cmd::pcap::Args),
    /// Measure protect/verify cost per suite, provider and payload size (optionally against OpenSSL).
    CryptoBench(cmd::crypto_bench::Args),
    /// TLS 1.3 handshakes per second/minute and CPU (rustls, aws-lc-rs) per certificate
    /// algorithm, beside OpenSSL on the same certificates and seed 004 Table 5.2.
    TlsBench(cmd::tls_bench::Args),
    /// List the profiles (IVN-AE, MACsec, ESP): ids, levels, key and tag lengths, providers.
    Suites(cmd::suites::Args),
    /// Build, inspect, use and remove a testbed of network namespaces (ECUs, veth, bridge).
    #[command(subcommand)]
    Testbed(cmd::testbed::Args),
    /// PTP clock state of hosts (linuxptp's pmc): whether one-way delays across them can be
    /// trusted (`check`).
    #[command(subcommand)]
    Clock(cmd::clock::Args),
    /// Hosts reached over SSH for experiments across machines (`check`: what each host of a
    /// plan has and lacks).
    #[command(subcommand)]
    Hosts(cmd::hosts::Args),
    /// Run one ping-pong scenario between two ECU processes: per-part timing, statistics, verdicts.
    Pingpong(cmd::pingpong::Args),
    /// Measure goodput, loss and CPU of a profile between N senders and one receiver, against
    /// the theoretical maximum of the (shaped) link and iperf3 on the same path.
    Throughput(cmd::throughput::Args),
    /// Seed 003's ADAS scenario: N cameras × 60 fps × 42.5 KiB frames over secured SOME/IP,
    /// tx→rx delay of every frame against 16 ms, CPU against nosec.
    Camera(cmd::camera::Args),
    /// Stream large sensor messages (24,938-byte lidar at 950/s) fragment by fragment: one-way
    /// p99.9 < 2 ms, round trips, loss and CPU per profile, beside plain and sockperf under-load.
    Underload(cmd::underload::Args),
    /// Send messages at the times and sizes of a timeline (sockperf playback CSV or a pcap):
    /// latency percentiles per profile, beside plain and sockperf playback.
    Playback(cmd::playback::Args),
    /// Run every scenario of a plan (TOML) and write the report (CSV, JSON, Markdown, HTML).
    Run(cmd::run::Args),
    /// The main job: testbed up, a preset plan, sockperf beside it, report, testbed down, verdicts.
    Validate(cmd::validate::Args),
    /// Attack a sender and receiver from a third node on the switch: spoofed, replayed, altered, flooded frames.
    Attack(cmd::attack::Args),
    /// Rebuild a report's summary.json, summary.md and index.html from its samples.csv.
    Report(cmd::report::Args),
    /// Internal: a node role of an experiment, started by the experiment commands.
    #[command(hide = true)]
    Node(cmd::node::Args),
    /// SOME/IP with per-service security: offer services (`serve`) and call them (`call`).
    #[command(subcommand)]
    Someip(cmd::someip::Args),
    /// Stream protected units under a key file, never reusing a nonce across restarts (--state-dir).
    Send(cmd::send::Args),
    /// Verify the units a sender streams and count accepted units and drops by reason.
    Receive(cmd::receive::Args),
    /// Write fresh random keys for a profile as a key file (mode 0600).
    Keygen(cmd::keygen::Args),
    /// The vehicle PKI: a root CA, a device certificate per ECU, revocation (`init`, `issue`,
    /// `revoke`, `list`).
    #[command(subcommand)]
    Pki(cmd::pki::Args),
    /// Hand each ECU the MKA CAKs of its network segments over mutual TLS 1.3; roll them when
    /// an ECU is revoked.
    Keyserver(cmd::pki::KeyserverArgs),
    /// MACsec on a TAP interface for a host whose kernel has none (`up`, `status`, `down`).
    #[command(subcommand)]
    Macsec(cmd::macsec::Args),
    /// A userspace IPsec ESP tunnel interface (`up`): IP packets routed into a TUN leave as ESP
    /// tunnel-mode packets to the peer.
    #[command(subcommand)]
    Esp(cmd::esp::Args),
    /// Bump-in-the-wire: protect every frame of legacy ECUs on --plain as MACsec on --protected,
    /// and hand verified frames back; runs until SIGINT/SIGTERM.
    Gateway(Box<cmd::gateway::Args>),
    /// Print a shell completion script (bash, zsh, fish, …) generated from these definitions.
    Completions(cmd::dist::CompletionsArgs),
    /// Write the man pages (ivnsec(1) and one per subcommand) into a folder.
    Man(cmd::dist::ManArgs),
    /// Time-triggered (TDMA) networks, seed 001: how many frames fit in a base period
    /// (`capacity`), schedules of periodic flows (`schedule`), slot-timed runs on a cascade (`run`).
    #[command(subcommand)]
    Tdma(cmd::tdma::Args),
}

/// Parses the command line (with the build's version texts), the options of a daemon's
/// `--config FILE` added where the command line does not give them ([`crate::daemon`]).
pub fn parse<I, T>(args: I) -> Result<Cli, crate::daemon::ParseError>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    use crate::daemon::ParseError;
    use clap::FromArgMatches;
    let cmd = full_command();
    let argv = crate::daemon::with_config(&cmd, args.into_iter().map(Into::into).collect())?;
    let matches = match cmd.clone().try_get_matches_from(&argv) {
        Ok(m) => m,
        Err(e) => return Err(profile_or_clap(&cmd, argv, e)),
    };
    Cli::from_arg_matches(&matches).map_err(ParseError::Clap)
}

/// The sentence of a profile argument that is no profile ([`crate::cmd::ProfileArgError`]).
fn profile_error(e: &clap::Error) -> Option<String> {
    use std::error::Error;
    if e.kind() != clap::error::ErrorKind::ValueValidation {
        return None;
    }
    e.source()
        .and_then(|s| s.downcast_ref::<crate::cmd::ProfileArgError>())
        .map(|p| p.0.clone())
}

/// clap's error, or, for a profile argument that is no profile, the command's own sentence
/// (printed as `ivnsec: …`, exit 2, as every other usage error the command finds). Anything
/// else clap finds wrong with the command line (a missing option, `--help`) comes first, as it
/// did when profiles were strings checked after clap: the command line is tried again with a
/// profile in place of each name that is none.
fn profile_or_clap(
    cmd: &clap::Command,
    mut argv: Vec<std::ffi::OsString>,
    e: clap::Error,
) -> crate::daemon::ParseError {
    use clap::error::{ContextKind, ContextValue};
    let Some(first) = profile_error(&e) else {
        return crate::daemon::ParseError::Clap(e);
    };
    let mut e = e;
    // Each round replaces one bad name; a command line has few.
    for _ in 0..argv.len() {
        let Some(ContextValue::String(bad)) = e.get(ContextKind::InvalidValue).cloned() else {
            break;
        };
        for a in argv.iter_mut() {
            if *a == *bad {
                *a = "plain".into();
            } else if let Some(opt) = a.to_str().and_then(|s| s.strip_suffix(bad.as_str()))
                && opt.starts_with("--")
                && opt.ends_with('=')
            {
                *a = format!("{opt}plain").into();
            }
        }
        match cmd.clone().try_get_matches_from(&argv) {
            Ok(_) => break,
            Err(next) if profile_error(&next).is_some() => e = next,
            Err(other) => return crate::daemon::ParseError::Clap(other),
        }
    }
    crate::daemon::ParseError::Profile(crate::error::usage(first))
}

/// The whole command with the build's version texts, as the man pages and completions show it.
pub fn full_command() -> clap::Command {
    crate::version::with_version(<Cli as clap::CommandFactory>::command())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile_error_of(args: &[&str]) -> Option<String> {
        match parse(args.iter().copied()) {
            Err(crate::daemon::ParseError::Profile(e)) => Some(format!("{e:#}")),
            _ => None,
        }
    }

    /// A profile name is parsed by clap, but is reported after anything else clap finds wrong
    /// (as when it was a string checked by the command), in the command's own words.
    #[test]
    fn a_bad_profile_comes_after_clap_s_own_errors() {
        assert_eq!(
            profile_error_of(&["ivnsec", "keygen", "--profile", "nope"]).as_deref(),
            Some("profile `nope`: unknown suite (see `ivnsec suites`)")
        );
        assert_eq!(
            profile_error_of(&["ivnsec", "keygen", "--profile=aes129-gcm"]).as_deref(),
            Some("profile `aes129-gcm`: unknown suite (see `ivnsec suites`)")
        );
        assert_eq!(
            profile_error_of(&["ivnsec", "frame", "protect", "--profile", "secoc-x", "00"])
                .as_deref(),
            Some(
                "--profile secoc-x: unknown SecOC profile (one of secoc-cmac-aes128, \
                 secoc-hmac-sha256)"
            )
        );
        assert_eq!(
            profile_error_of(&["ivnsec", "pcap", "verify", "--profile", "secoc-x", "f.pcap"])
                .as_deref(),
            Some("--profile secoc-x: unknown suite (see `ivnsec suites`)")
        );
        // A missing option, and --help, are clap's, as before.
        for args in [
            &["ivnsec", "send", "--profile", "nope"][..],
            &["ivnsec", "send", "--profile", "nope", "--help"],
            &[
                "ivnsec",
                "underload",
                "--profile",
                "nope",
                "--profile",
                "x",
                "--bogus",
            ],
        ] {
            assert!(
                matches!(
                    parse(args.iter().copied()),
                    Err(crate::daemon::ParseError::Clap(_))
                ),
                "{args:?}"
            );
        }
        // Two bad names: the first is the one reported.
        assert_eq!(
            profile_error_of(&["ivnsec", "underload", "--profile", "x1", "--profile", "x2"])
                .as_deref(),
            Some("profile `x1`: unknown suite (see `ivnsec suites`)")
        );
    }

    #[test]
    fn command_definition_is_consistent() {
        use clap::CommandFactory;
        crate::version::with_version(Cli::command()).debug_assert();
    }
}
