//! `ivnsec send`: stream protected units under a long-term key from a key file, on an interface
//! (raw Ethernet; ESP as IPv4 protocol 50) or over UDP, never reusing a sequence number / PN /
//! nonce across restarts (the reservation in `--state-dir`, docs/nonce-safety.md).

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use ivnsec_core::profile::NamedProfile;
use ivnsec_crypto::ProviderChoice;
use ivnsec_node::keys::highwater;
use ivnsec_node::traffic::send::{SendSettings, Sender};
use serde_json::json;

use super::common::{mac_opt, on, stop_on_signal};
use crate::output::Json;

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Every unit carries the next sequence number / PN of the SA. Before a number is used it is \
reserved on disk in --state-dir (blocks of --reserve-block, written to a temporary file, fsynced, \
renamed, directory fsynced), so a sender restarted under the same key — after a crash or kill -9 \
— resumes above every number it may have sent and never repeats a (key, nonce) pair. When the \
numbers run out (--seq-limit, or 2^32 − 1 for MACsec without XPN and for ESP) it stops with exit \
code 1: a new key must be installed. See docs/nonce-safety.md.

The key file must have a `profile` line naming the same suite as --profile (another level of it, \
e.g. aes128-gcm/auth for aes128-gcm, is fine): one key serves one suite, and the nonce state is \
kept per suite, not per spelling. The file must be private (mode 0600). The first reservation \
records the SA in KEYFILE.used beside the key file; a later start that finds the SA recorded but \
no state in --state-dir (a mistyped directory, a deleted file) refuses to count from 1 again \
unless --i-know-this-key-is-new is given.

The summary's `stopped_by` says why sending ended: count, signal, exhausted (new key needed, exit \
1), state_write_failed (the state could not be written, e.g. a full disk: exit 3, fix and \
restart), state_lock_lost (the state directory or lock was touched under the running sender: \
exit 3), error (a send failed).

The payload's first 8 bytes carry the unit's index in this run (big-endian), the rest are zero.

Examples (one key file per profile):
  ivnsec keygen --profile aes128-gcm --out k.toml
  ivnsec keygen --profile macsec-gcm-aes-128 --out macsec.toml
  ivnsec send --profile aes128-gcm --keys k.toml --iface eth0 --to 02:00:00:00:00:02 --state-dir /var/lib/ivnsec
  ivnsec send --profile esp-aes128-gcm --keys esp.toml --iface eth0 --to-ip 10.0.0.2 --from-ip 10.0.0.1 --state-dir st
  ivnsec send --profile macsec-gcm-aes-128 --keys macsec.toml --udp 127.0.0.1:7000 --state-dir st --count 1000 --rate 500
  # only for a key that is known never to have sent under this SA, whose record says otherwise:
  ivnsec send --profile aes128-gcm --keys k.toml --udp 127.0.0.1:7000 --state-dir st2 --i-know-this-key-is-new")]
pub struct Args {
    /// Profile (`ivnsec suites` lists them): IVN-AE suite[/auth|/conf], macsec-…, esp-…, secoc-…;
    /// or someip-SUITE[/auth|/conf], someip-nosec.
    #[arg(long, value_parser = super::profile_arg)]
    pub profile: NamedProfile,
    /// Key file (TOML with `profile` and hex `key`, `mac_key`, `iv`; `ivnsec keygen` writes
    /// one). Must be mode 0600 (no group/other access) and name --profile's suite.
    #[arg(long, value_name = "FILE")]
    pub keys: PathBuf,
    /// Send on this interface: raw Ethernet frames (ESP: IPv4 protocol 50 through the kernel's
    /// IP layer). Needs root or CAP_NET_RAW.
    #[arg(
        long,
        value_name = "IF",
        required_unless_present = "udp",
        conflicts_with = "udp"
    )]
    pub iface: Option<String>,
    /// Send every unit in a UDP datagram to ADDR:PORT instead of an interface (no root needed).
    #[arg(long, value_name = "ADDR:PORT")]
    pub udp: Option<SocketAddr>,
    /// Destination MAC (the receiver's), aa:bb:cc:dd:ee:ff. Needed with --iface for IVN-AE and
    /// MACsec; over UDP it defaults to 02:00:00:00:00:02.
    #[arg(long, value_name = "MAC")]
    pub to: Option<String>,
    /// This node's MAC (source address; the MACsec SCI is MAC ‖ 0001). Default: the
    /// interface's MAC, or 02:00:00:00:00:01 over UDP.
    #[arg(long, value_name = "MAC")]
    pub mac: Option<String>,
    /// ESP: the receiver's IPv4 address (required with --iface; default 127.0.0.1 over UDP).
    #[arg(long, value_name = "IPV4")]
    pub to_ip: Option<Ipv4Addr>,
    /// ESP: this node's IPv4 address (required with --iface; default 127.0.0.1 over UDP).
    #[arg(long, value_name = "IPV4")]
    pub from_ip: Option<Ipv4Addr>,
    /// Payload bytes per unit. The protected unit must fit the link: the interface's MTU with
    /// --iface, one UDP datagram (65,507 bytes) with --udp; checked before anything is reserved.
    #[arg(long, default_value_t = 64)]
    pub payload: usize,
    /// Units to send; 0 sends until SIGINT or SIGTERM.
    #[arg(long, default_value_t = 0)]
    pub count: u64,
    /// Units per second; 0 sends as fast as possible.
    #[arg(long, default_value_t = 0.0, value_name = "PPS")]
    pub rate: f64,
    /// Directory of the persistent nonce state (required: without it a restart under the same
    /// key would reuse sequence numbers). Created if missing.
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Sequence numbers reserved per state write, 1 to 1048576 (2^20). Larger: fewer fsyncs; a
    /// crash skips at most this many numbers. The bound keeps a crash from burning more than
    /// 1/4096 of a 32-bit PN space (MACsec without XPN, ESP) while still allowing one write per
    /// 0.7 s at 1.5 M units/s (1 Gb/s of minimum-size frames).
    #[arg(
        long,
        default_value_t = highwater::DEFAULT_BLOCK,
        value_name = "N",
        value_parser = clap::value_parser!(u64).range(1..=highwater::MAX_BLOCK)
    )]
    pub reserve_block: u64,
    /// Highest sequence number / PN this key may carry (below the protocol's own limit); the
    /// sender stops with exit code 1 when it is used.
    #[arg(long, value_name = "N")]
    pub seq_limit: Option<u64>,
    /// Start at sequence number 1 although KEYFILE.used says this key has sent under this SA
    /// and --state-dir holds no state for it. RISK: if the key did send before, every (key,
    /// nonce) pair from 1 up is sent again, which breaks the cipher (GCM: forgeries). Only for a
    /// key you know never sent under this SA; otherwise give the old --state-dir or a new key.
    #[arg(long)]
    pub i_know_this_key_is_new: bool,
    /// Record every unit sent (classic pcap, Ethernet; ESP gets its Ethernet/IPv4 headers).
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<PathBuf>,
    /// Crypto provider: portable, fast, openssl, or auto (the fastest per primitive: `ivnsec suites`).
    #[arg(long, default_value = "auto")]
    pub provider: ProviderChoice,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

/// The library's settings from the options.
fn settings(a: Args) -> Result<SendSettings> {
    Ok(SendSettings {
        on: on(a.iface, a.udp)?,
        to: mac_opt("--to", a.to.as_deref())?,
        mac: mac_opt("--mac", a.mac.as_deref())?,
        profile: a.profile,
        keys: a.keys,
        to_ip: a.to_ip,
        from_ip: a.from_ip,
        payload: a.payload,
        count: a.count,
        rate: a.rate,
        state_dir: a.state_dir,
        reserve_block: a.reserve_block,
        seq_limit: a.seq_limit,
        confirm_new_key: a.i_know_this_key_is_new,
        pcap: a.pcap,
        provider: a.provider,
    })
}

pub fn run(a: Args) -> Result<ExitCode> {
    let mut json = Json::claim(a.json)?;
    let as_json = a.json;
    let s = settings(a)?;
    let sender = Sender::open(&s)?;
    let stop = stop_on_signal()?;
    let r = sender.run(&stop)?;
    let hw = &r.nonce;
    if as_json {
        json.print(&json!({
            "profile": s.profile.name(),
            "sent": r.sent,
            "first_seq": r.first_seq,
            "last_seq": r.last_seq,
            "reserved": hw.reserved(),
            "reservations": hw.writes(),
            "limit": hw.limit(),
            "state_file": hw.path().display().to_string(),
            "nonce_domain": hw.domain(),
            "fresh_state": hw.is_fresh(),
            "migrated_from": hw.migrated(),
            "stopped_by": r.stopped_by,
        }))?;
    } else {
        let range = match (r.first_seq, r.last_seq) {
            (Some(f), Some(l)) => format!("sequence numbers {f}..={l}"),
            _ => "no sequence number used".to_string(),
        };
        println!(
            "sent {} units ({}), {range}; reserved up to {} in {}; stopped by {}",
            r.sent,
            s.profile,
            hw.reserved(),
            hw.path().display(),
            r.stopped_by
        );
    }
    match r.failure {
        Some(e) => Err(e),
        None => Ok(ExitCode::SUCCESS),
    }
}
