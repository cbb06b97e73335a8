//! Nonce safety across restarts: a persistent high-water mark of the sequence numbers / PNs one
//! outbound SA may have used (docs/nonce-safety.md). The one module every sender under a
//! long-term key uses (`send`, `someip serve|call`; the MACsec TAP, gateway, ESP tunnel and MKA
//! as they come), with one set of tests ([`tests`], the contract every sender is checked against).
//!
//! Every AEAD nonce of our SAs is derived from a per-key constant and the sequence number, so a
//! sender that restarts under the same key and counts from 1 again reuses nonces, which breaks
//! GCM and ChaCha20-Poly1305 outright. [`HighWater`] keeps, in a state directory, the highest
//! number the SA has *reserved*. Numbers are reserved ahead in blocks, and a reservation is on
//! disk (temporary file written, fsynced, renamed over the state file, directory fsynced) before
//! any number of it goes out. After a crash — even `kill -9` or a power cut — the sender resumes
//! at `reserved + 1`: it may skip up to a block of numbers, it never repeats one.
//!
//! - **What names the state**: a fingerprint of (nonce domain, SA identity, key bytes). The nonce
//!   domain ([`Profile::nonce_domain`]) is the suite whose nonce construction is used, not the spelling of
//!   the profile: `aes128-gcm`, `aes128-gcm/conf` and `aes128-gcm/auth` share one state. State
//!   files of the previous version named after another spelling are found and honoured.
//! - **What is locked**: an exclusive `flock` on the per-SA `.lock` file for the life of the
//!   sender, and a short `flock` on the state directory itself around every read, check and
//!   reservation. Before each reservation the sender checks that the directory, the lock file it
//!   holds and the mark on disk are still what it locked and wrote; otherwise it stops.
//! - **Used keys**: with a used-key record (beside the key file), the first reservation of an SA
//!   records it there; a later start that finds the record but no state file refuses to count
//!   from 1 unless told the key is new.
//! - **No links followed**: every file in the state directory is opened relative to the locked
//!   directory with `O_NOFOLLOW` (the temporary file with `O_EXCL`); the directory must belong to
//!   this user and be writable by nobody else.
//!
//! File I/O happens only when a block runs out ([`HighWater::claim`] is a compare otherwise).

use std::fmt;
use std::fs::{self, File};
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use ivnsec_core::crypto::{MAX_MAC_LEN, MacAlg};
use ivnsec_net::sys::{self, OpenAt};

use ivnsec_core::channel::DirectionKeys;
use ivnsec_core::profile::Profile;

use crate::error::{EnvError, UsageError};

mod files;
mod record;

pub(crate) use files::{DirLock, read_bounded};
use files::{file_id, lock_briefly, prepare_dir, read_state, write_atomic};
use record::UsedRecord;
pub(crate) use record::check_record_file;
pub use record::used_record_entries;

/// Default size of a reservation block (`--reserve-block`).
pub const DEFAULT_BLOCK: u64 = 4096;
/// Largest reservation block: 2^20. At 1.5 M units/s (1 Gb/s of minimum-size frames) that is
/// one state write every 0.7 s, and a crash skips at most 1/4096 of a 32-bit PN space (MACsec
/// without XPN, ESP without ESN): a key survives thousands of crashes.
pub const MAX_BLOCK: u64 = 1 << 20;
/// First line of every state file.
const MAGIC: &str = "ivnsec-highwater 1";
/// First line of a state file of the previous version (named after another spelling of the
/// profile) whose mark was moved into the state of its nonce domain: the previous version
/// refuses it instead of counting from 1 under that spelling again.
const MOVED_MAGIC: &str = "ivnsec-highwater moved";
/// First line of every receiver's acceptance mark ([`Kind::Receive`], `keys::rxmark`).
const RX_MAGIC: &str = "ivnsec-rxmark 1";
/// First line of a used-key record.
const RECORD_MAGIC: &str = "ivnsec-used-keys 1";
/// Key of the HMAC-SHA256 that fingerprints an SA (a fixed label: the fingerprint is a one-way
/// function of the key material, domain-separated from every other use of it).
const FINGERPRINT_LABEL: &[u8] = b"ivnsec highwater fingerprint v1";
/// Largest state file read (one is about 200 bytes).
const MAX_STATE_FILE: u64 = 4096;
/// Largest used-key record read (one line per SA that sent under the key).
const MAX_RECORD_FILE: u64 = 256 * 1024;
/// Directory entries looked at for state files of the previous version.
const MAX_SCAN: usize = 100_000;
/// How long a sender waits for another one's short directory lock before giving up.
const DIR_LOCK_WAIT: Duration = Duration::from_secs(10);
/// The option that confirms a key is new (named in errors of every sender that has it).
pub const CONFIRM_OPTION: &str = "--i-know-this-key-is-new";

/// What a state file records. One machinery (directory checks, locks, atomic durable writes,
/// fingerprint naming, refusal of corrupt files) serves both; the files differ in name
/// (`.hw` / `.rx`), first line and value line, so a sender's and a receiver's state of one SA
/// (a host that sends and receives under one key file) never meet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A sender's reservation: `reserved N`, every number ≤ N may have been sent.
    Send,
    /// A receiver's acceptance mark: `accepted N`, every number this receiver ever accepted
    /// is ≤ N (`keys::rxmark`).
    Receive,
}

impl Kind {
    fn magic(self) -> &'static str {
        match self {
            Kind::Send => MAGIC,
            Kind::Receive => RX_MAGIC,
        }
    }

    /// The value line's key.
    fn value_key(self) -> &'static str {
        match self {
            Kind::Send => "reserved",
            Kind::Receive => "accepted",
        }
    }

    /// File names: (state, temporary, lock) of the stem.
    fn names(self, stem: &str) -> (String, String, String) {
        match self {
            Kind::Send => (
                format!("{stem}.hw"),
                format!("{stem}.hw.tmp"),
                format!("{stem}.lock"),
            ),
            Kind::Receive => (
                format!("{stem}.rx"),
                format!("{stem}.rx.tmp"),
                format!("{stem}.rx.lock"),
            ),
        }
    }
}

/// Settings of a [`HighWater`].
#[derive(Clone, Debug)]
pub struct Options {
    /// Numbers reserved per write (1..=[`MAX_BLOCK`]).
    pub block: u64,
    /// Highest number the user allows under this key (`--seq-limit`), if any.
    pub seq_limit: Option<u64>,
    /// Highest number the protocol can carry (2^32 − 1 for MACsec without XPN and ESP without
    /// ESN, 2^64 − 1 otherwise).
    pub protocol_max: u64,
    /// The key's used-key record (`keyfile::used_record`, beside the key file). `None` where
    /// the key does not come from a key file: a missing state then only warns.
    pub used_record: Option<PathBuf>,
    /// Start at 1 although the record lists this SA and its state file is missing
    /// ([`CONFIRM_OPTION`]).
    pub confirm_new_key: bool,
    /// Let the block grow under a fast stream (the data planes: `macsec up`, `gateway`, `esp
    /// up`): a reservation written less than [`GROW_WITHIN`] after this process's previous one
    /// doubles the block for the next, up to [`grow_cap`]. `block` is then the first block.
    pub grow: bool,
}

/// A sender's reservations closer together than this double its block ([`Options::grow`]): a
/// stream fast enough to use half a block in less time settles at a few state writes a second
/// instead of hundreds (a 5 Gb/s TCP stream through a `macsec up` pair is 430,000 frames a
/// second: a write every 4.8 ms with 4,096-PN blocks, each with two fsyncs).
pub const GROW_WITHIN: std::time::Duration = std::time::Duration::from_millis(100);

/// The largest block a growing sender reaches: `block` itself if larger, else 1/4096 of the
/// SA's number space (`limit / 4096`), at most [`MAX_BLOCK`]: what a crash may skip stays a
/// small share of the numbers, also under a small `--seq-limit` (below 2^14 a block of 4 or
/// more stays as configured).
pub fn grow_cap(block: u64, limit: u64) -> u64 {
    block.max(MAX_BLOCK.min(limit >> 12))
}

impl Default for Options {
    fn default() -> Options {
        Options {
            block: DEFAULT_BLOCK,
            seq_limit: None,
            protocol_max: u64::MAX,
            used_record: None,
            confirm_new_key: false,
            grow: false,
        }
    }
}

/// Why opening or a reservation failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum HwError {
    /// The state file (or the used-key record) exists but is not valid.
    Corrupt { path: PathBuf, why: String },
    /// Another process holds the lock.
    Locked { path: PathBuf },
    /// Reading, writing or syncing failed.
    Io {
        path: PathBuf,
        what: &'static str,
        err: io::Error,
    },
    /// Every number up to the limit is used: a new key must be installed.
    Exhausted { limit: u64, configured: bool },
    /// Bad options (block 0 or too large, limit 0).
    BadOption(String),
    /// The state directory or an entry in it is not safe to use (a symbolic link, not a regular
    /// file, writable by others, not ours).
    Unsafe { path: PathBuf, why: String },
    /// Since this process locked its state, the directory or the lock file was removed or
    /// replaced, or another process wrote a higher mark: it stops before using another number.
    LockLost { path: PathBuf, why: String },
    /// The used-key record lists this SA, but its state file is missing.
    UsedKeyNoState {
        state: PathBuf,
        record: PathBuf,
        entry: String,
    },
}

impl fmt::Display for HwError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HwError::Corrupt { path, why } => write!(
                f,
                "nonce state file {}: {why}; refusing to guess where the sequence numbers stand \
                 (a wrong guess reuses nonces). Restore the file from a backup, or install a new \
                 key and remove the file",
                path.display()
            ),
            HwError::Locked { path } => write!(
                f,
                "nonce state {} is locked by another process sending under the same key and SA; \
                 two senders would reuse each other's sequence numbers. Stop the other sender or \
                 give this one its own key",
                path.display()
            ),
            HwError::Io { path, what, err } => write!(
                f,
                "nonce state {}: {what}: {err}; nothing was sent under numbers that are not on \
                 disk. Fix the state directory (space, permissions) and restart",
                path.display()
            ),
            HwError::Exhausted { limit, configured } => write!(
                f,
                "sequence numbers exhausted: every number up to {limit} ({}) is used under this \
                 key; sending stopped instead of wrapping. A new key must be installed \
                 (`ivnsec keygen`) before this SA sends again",
                if *configured {
                    "the configured --seq-limit"
                } else {
                    "the protocol's limit"
                }
            ),
            HwError::BadOption(m) => f.write_str(m),
            HwError::Unsafe { path, why } => write!(
                f,
                "nonce state {}: {why}; refusing to use it (whoever can plant a link or a file \
                 there can make a sender overwrite other files or reuse nonces)",
                path.display()
            ),
            HwError::LockLost { path, why } => write!(
                f,
                "nonce state {}: {why}; another sender may be using this SA now, so this one \
                 stopped before using a number it had not reserved. Find out what touched the \
                 state directory, make sure one sender runs per key and SA, then restart",
                path.display()
            ),
            HwError::UsedKeyNoState {
                state,
                record,
                entry,
            } => write!(
                f,
                "this key has sent under this SA before ({} lists it: {entry}), but its nonce \
                 state {} is missing: counting from 1 again would reuse every (key, nonce) pair \
                 sent since. Give the --state-dir that holds the state (the entry names it), or \
                 restore the state file, or install a new key (`ivnsec keygen`). Only if you \
                 know this key never sent under this SA, pass {CONFIRM_OPTION}",
                record.display(),
                state.display()
            ),
        }
    }
}

impl std::error::Error for HwError {}

impl HwError {
    /// Into the exit-code convention: corrupt, locked, unsafe, a used key without state and bad
    /// options are configuration errors (2); I/O and a lost lock are the environment (3);
    /// exhaustion is a refusal to send (1).
    pub fn into_anyhow(self) -> anyhow::Error {
        match self {
            HwError::Corrupt { .. }
            | HwError::Locked { .. }
            | HwError::BadOption(_)
            | HwError::Unsafe { .. }
            | HwError::UsedKeyNoState { .. } => anyhow::Error::new(UsageError(self.to_string())),
            HwError::Io { .. } | HwError::LockLost { .. } => {
                anyhow::Error::new(EnvError(self.to_string()))
            }
            HwError::Exhausted { .. } => anyhow::Error::new(self),
        }
    }

    /// What a sender's summary says stopped it (`stopped_by`) when a claim fails: `exhausted`
    /// (a new key is needed), `state_write_failed` (disk full, I/O error: fix and restart),
    /// `state_lock_lost` (the state was touched under the running sender), `state_error`.
    pub fn stop_reason(&self) -> &'static str {
        match self {
            HwError::Exhausted { .. } => "exhausted",
            HwError::Io { .. } => "state_write_failed",
            HwError::LockLost { .. } => "state_lock_lost",
            _ => "state_error",
        }
    }
}

/// Whether `domain` is the nonce domain of the profile named `name`.
fn is_domain(name: &str, domain: &str) -> bool {
    name.parse::<Profile>()
        .map(|p| p.nonce_domain())
        .ok()
        .as_deref()
        == Some(domain)
}

/// Hex HMAC-SHA256 fingerprint of (nonce domain, SA identity, cipher key, MAC key), over the
/// decoded key bytes (so `0x…` and `aa:bb…` spellings of one key share one state). Only this
/// one-way value reaches the disk. The IV / salt is deliberately left out: changing it under the
/// same key must not restart the counter (for IVN-AE, nonce = iv XOR (key id ‖ seq), so two IVs
/// under one key can still collide; one counter per key and key id cannot).
///
/// The bytes: HMAC-SHA256(key = `ivnsec highwater fingerprint v1`, message = for each of the
/// four fields its length as a big-endian u64, then the field). The previous version passed the
/// raw `--profile` string as the first field; [`HighWater::open`] passes the nonce domain.
pub fn fingerprint(domain: &str, sa_identity: &str, key: &[u8], mac_key: &[u8]) -> String {
    let mac = ivnsec_crypto::PORTABLE
        .keys
        .mac(MacAlg::HmacSha256, FINGERPRINT_LABEL)
        .expect("the portable provider has HMAC-SHA256");
    // Length-prefixed parts, so no two different inputs concatenate to the same bytes.
    let fields: [&[u8]; 4] = [domain.as_bytes(), sa_identity.as_bytes(), key, mac_key];
    let lens: Vec<[u8; 8]> = fields
        .iter()
        .map(|f| (f.len() as u64).to_be_bytes())
        .collect();
    let mut parts: Vec<&[u8]> = Vec::with_capacity(8);
    for (l, f) in lens.iter().zip(fields) {
        parts.push(l);
        parts.push(f);
    }
    let mut out = [0u8; MAX_MAC_LEN];
    let n = mac.compute(&parts, &mut out);
    hex::encode(&out[..n.min(32)])
}

/// A file name stem part from a profile string (only `[A-Za-z0-9-]`, the rest `_`).
fn safe_name(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The options' own bounds, and a domain that is a suite's canonical name.
fn check_options(opts: &Options, domain: &str) -> Result<(), HwError> {
    if opts.block == 0 || opts.block > MAX_BLOCK {
        return Err(HwError::BadOption(format!(
            "--reserve-block must be between 1 and {MAX_BLOCK}, got {}",
            opts.block
        )));
    }
    if opts.seq_limit == Some(0) {
        return Err(HwError::BadOption(
            "--seq-limit must be at least 1 (sequence numbers start at 1)".to_string(),
        ));
    }
    if !is_domain(domain, domain) {
        return Err(HwError::BadOption(format!(
            "`{domain}` is not a nonce domain (the suite's canonical name, e.g. \
             `aes128-gcm`): nonce state must not be keyed by a spelling of a profile"
        )));
    }
    Ok(())
}

/// The state's lock file in the state directory (never through a symbolic link), locked
/// (another process holding it: [`HwError::Locked`] naming the state `path`), with this pid in it.
fn open_lock(
    dir_file: &File,
    lock_path: &Path,
    lock_name: &str,
    path: &Path,
) -> Result<File, HwError> {
    let mut lock =
        sys::open_at(dir_file, lock_name, OpenAt::ReadWriteCreate, 0o600).map_err(|e| {
            if sys::is_symlink_error(&e) {
                HwError::Unsafe {
                    path: lock_path.to_path_buf(),
                    why: "the lock file is a symbolic link".to_string(),
                }
            } else {
                HwError::Io {
                    path: lock_path.to_path_buf(),
                    what: "opening the lock file",
                    err: e,
                }
            }
        })?;
    let lock_meta = lock.metadata().map_err(|err| HwError::Io {
        path: lock_path.to_path_buf(),
        what: "reading the lock file",
        err,
    })?;
    if !lock_meta.is_file() {
        return Err(HwError::Unsafe {
            path: lock_path.to_path_buf(),
            why: "the lock file is not a regular file".to_string(),
        });
    }
    match lock_briefly(&lock) {
        Ok(true) => {}
        Ok(false) => {
            return Err(HwError::Locked {
                path: path.to_path_buf(),
            });
        }
        Err(err) => {
            return Err(HwError::Io {
                path: lock_path.to_path_buf(),
                what: "locking",
                err,
            });
        }
    }
    // For people looking: who holds it (informational; the flock is what counts).
    let _ = lock
        .set_len(0)
        .and_then(|_| lock.write_all(format!("{}\n", std::process::id()).as_bytes()));
    Ok(lock)
}

/// A fresh state (no file, no earlier spelling): refused where the used-key record says the key
/// has sent (unless confirmed), else a warning that numbering starts at 1.
fn warn_fresh_start(
    record: &Option<UsedRecord>,
    opts: &Options,
    warn_fresh: bool,
    dir: &Path,
    path: &Path,
    domain: &str,
    sa: &str,
) -> Result<(), HwError> {
    match record {
        Some(r) if r.entry.is_some() && !opts.confirm_new_key => {
            return Err(HwError::UsedKeyNoState {
                state: path.to_path_buf(),
                record: r.path.clone(),
                entry: r.entry.clone().unwrap_or_default(),
            });
        }
        Some(r) if r.entry.is_some() => eprintln!(
            "ivnsec: warning: {} says this key has sent under {domain} SA `{sa}` ({}), \
             but its nonce state {} is missing; starting at sequence number 1 anyway \
             because {CONFIRM_OPTION} was given. If the key did send, every (key, \
             nonce) pair from 1 up is being reused now",
            r.path.display(),
            r.entry.as_deref().unwrap_or(""),
            path.display()
        ),
        _ if !warn_fresh => {}
        _ => eprintln!(
            "ivnsec: warning: no nonce state for {domain} SA `{sa}` under this key in \
             {}: starting at sequence number 1, as for a key that has never sent. If \
             this key has sent under this SA before (another --state-dir, a deleted \
             state file), every (key, nonce) pair from 1 up is reused: stop now and \
             give the old --state-dir, or install a new key{}",
            dir.display(),
            match record {
                Some(r) => format!(" ({} lists no earlier use)", r.path.display()),
                None => " (no used-key record to check against)".to_string(),
            }
        ),
    }
    Ok(())
}

/// A state file of the previous version for this SA under another spelling of its profile.
struct OldState {
    name: String,
    reserved: u64,
    /// Its lock, held until its mark is moved (a sender of the previous version under that
    /// spelling is locked out meanwhile).
    _lock: File,
}

/// The previous version's state files in `dir` for (`domain`, `sa`, key): `.hw` files whose
/// `profile` line is another spelling of `domain` and whose fingerprint over that spelling
/// matches the key.
fn find_old_states(
    dir: &File,
    dir_path: &Path,
    own: &str,
    domain: &str,
    sa: &str,
    key: &[u8],
    mac_key: &[u8],
) -> Result<Vec<OldState>, HwError> {
    let rd = fs::read_dir(dir_path).map_err(|err| HwError::Io {
        path: dir_path.to_path_buf(),
        what: "listing the state directory",
        err,
    })?;
    let mut out = Vec::new();
    for e in rd.take(MAX_SCAN) {
        let Ok(e) = e else { continue };
        let Some(name) = e.file_name().to_str().map(str::to_string) else {
            continue;
        };
        let Some(stem) = name.strip_suffix(".hw") else {
            continue;
        };
        if name == own {
            continue;
        }
        let Ok(f) = sys::open_at(dir, &name, OpenAt::Read, 0) else {
            continue; // a link, gone, unreadable: not a state of ours
        };
        if !f.metadata().is_ok_and(|m| m.is_file()) {
            continue;
        }
        let Ok(Ok(text)) = read_bounded(f, MAX_STATE_FILE) else {
            continue;
        };
        let mut lines = text.lines();
        if lines.next() != Some(MAGIC) {
            continue;
        }
        let (Some(p), Some(s), Some(fp)) = (
            lines.next().and_then(|l| l.strip_prefix("profile ")),
            lines.next().and_then(|l| l.strip_prefix("sa ")),
            lines.next().and_then(|l| l.strip_prefix("fingerprint ")),
        ) else {
            continue;
        };
        if s != sa || p == domain {
            continue;
        }
        if !is_domain(p, domain) {
            continue;
        }
        if fingerprint(p, sa, key, mac_key) != fp {
            continue; // another key
        }
        let path = dir_path.join(&name);
        let header = format!("{MAGIC}\nprofile {p}\nsa {s}\nfingerprint {fp}\n");
        let reserved = parse(&text, &header, Kind::Send).map_err(|why| HwError::Corrupt {
            path: path.clone(),
            why,
        })?;
        let lock_name = format!("{stem}.lock");
        let lock = sys::open_at(dir, &lock_name, OpenAt::ReadWriteCreate, 0o600).map_err(|e| {
            if sys::is_symlink_error(&e) {
                HwError::Unsafe {
                    path: dir_path.join(&lock_name),
                    why: "the lock file is a symbolic link".to_string(),
                }
            } else {
                HwError::Io {
                    path: dir_path.join(&lock_name),
                    what: "opening the lock file",
                    err: e,
                }
            }
        })?;
        match lock_briefly(&lock) {
            Ok(true) => {}
            Ok(false) => return Err(HwError::Locked { path }),
            Err(err) => {
                return Err(HwError::Io {
                    path,
                    what: "locking",
                    err,
                });
            }
        }
        out.push(OldState {
            name,
            reserved,
            _lock: lock,
        });
    }
    Ok(out)
}

/// Whether a state file of the SA `sa_identity` in nonce domain `domain` under `keys` exists in
/// `dir` (nothing is opened, locked or created): lets a sender whose SA identity changed between
/// versions find the state of its previous identity and continue above it.
pub fn state_exists(dir: &Path, domain: &str, sa_identity: &str, keys: &DirectionKeys) -> bool {
    let sa = sa_identity.replace(['\n', '\r'], " ");
    let fp = fingerprint(domain, &sa, keys.key(), keys.mac_key());
    let name = format!("{}-{}.hw", safe_name(domain), &fp[..32]);
    std::fs::symlink_metadata(dir.join(name)).is_ok_and(|m| m.is_file())
}

/// The reservation of one outbound SA; holds the lock while it lives.
#[derive(Debug)]
pub struct HighWater {
    /// The state directory as given, and the directory itself (open; every entry is reached
    /// through it) with its `(st_dev, st_ino)`.
    dir: PathBuf,
    dir_file: File,
    dir_id: (u64, u64),
    path: PathBuf,
    name: String,
    tmp_name: String,
    lock_name: String,
    /// Keeps the `flock` (released when the process ends, however it ends).
    lock: File,
    lock_id: (u64, u64),
    /// The lines of the file other than `reserved` (magic, profile, SA, fingerprint).
    header: String,
    /// A sender's reservation or a receiver's acceptance mark.
    kind: Kind,
    fingerprint: String,
    domain: String,
    sa: String,
    record: Option<UsedRecord>,
    /// Appended to this SA's entry in the used-key record (`| note`) when it is first written.
    record_note: Option<String>,
    /// Highest number reserved on disk: every number ≤ it may have been used.
    reserved: u64,
    /// Numbers the next reservation takes: the configured block, or more once grown.
    block: u64,
    /// Where the block stops growing; `block` itself when it does not grow.
    block_cap: u64,
    /// When this process last wrote a reservation (for [`Options::grow`]).
    last_write: Option<std::time::Instant>,
    limit: u64,
    configured_limit: bool,
    /// Reservations written by this process.
    writes: u64,
    /// No state was found: the SA starts at 1.
    fresh: bool,
    /// State files of the previous version whose marks this state took over.
    migrated: Vec<String>,
}

impl HighWater {
    /// Opens (or starts) the state of the SA `sa_identity` in nonce domain `domain`
    /// ([`Profile::nonce_domain`]; a profile spelling is refused) under `keys` in `dir` (created if
    /// missing) and locks it.
    pub fn open(
        dir: &Path,
        domain: &str,
        sa_identity: &str,
        keys: &DirectionKeys,
        opts: Options,
    ) -> Result<HighWater, HwError> {
        Self::open_with(dir, domain, sa_identity, keys, opts, true, Kind::Send)
    }

    /// [`open`](Self::open) for a key agreed at run time (an MKA SAK): the same state, locks
    /// and checks, but a missing state is the normal case (a fresh SAK has never sent) and is
    /// not warned about. A SAK met again — a restarted member handed the SAK it used before —
    /// finds its state and resumes above it exactly as a long-term key does.
    pub fn open_agreed(
        dir: &Path,
        domain: &str,
        sa_identity: &str,
        keys: &DirectionKeys,
        opts: Options,
    ) -> Result<HighWater, HwError> {
        Self::open_with(dir, domain, sa_identity, keys, opts, false, Kind::Send)
    }

    /// A receiver's acceptance mark of the peer's SA `sa_identity` in nonce domain `domain`
    /// under `keys` (`keys::rxmark`): the same naming, checks, locks and durable writes as a
    /// sender's state, in its own files (`.rx`); no used-key record and no migration of older
    /// files. [`reserved`](Self::reserved) is the mark: every number ever accepted is ≤ it.
    pub fn open_receiver(
        dir: &Path,
        domain: &str,
        sa_identity: &str,
        keys: &DirectionKeys,
        protocol_max: u64,
    ) -> Result<HighWater, HwError> {
        let opts = Options {
            block: 1,
            seq_limit: None,
            protocol_max,
            used_record: None,
            confirm_new_key: false,
            grow: false,
        };
        Self::open_with(dir, domain, sa_identity, keys, opts, false, Kind::Receive)
    }

    fn open_with(
        dir: &Path,
        domain: &str,
        sa_identity: &str,
        keys: &DirectionKeys,
        opts: Options,
        warn_fresh: bool,
        kind: Kind,
    ) -> Result<HighWater, HwError> {
        check_options(&opts, domain)?;
        let (key, mac_key) = (keys.key(), keys.mac_key());
        let sa = sa_identity.replace(['\n', '\r'], " ");
        let fp = fingerprint(domain, &sa, key, mac_key);
        let dir_file = prepare_dir(dir)?;
        let dir_id = file_id(&dir_file).map_err(|err| HwError::Io {
            path: dir.to_path_buf(),
            what: "reading the state directory",
            err,
        })?;
        let stem = format!("{}-{}", safe_name(domain), &fp[..32]);
        let (name, tmp_name, lock_name) = kind.names(&stem);
        let path = dir.join(&name);
        let lock_path = dir.join(&lock_name);
        let guard = DirLock::take(&dir_file, dir, "locking the state directory")?;

        let lock = open_lock(&dir_file, &lock_path, &lock_name, &path)?;
        let header = format!(
            "{}\nprofile {domain}\nsa {sa}\nfingerprint {fp}\n",
            kind.magic()
        );
        let on_disk = read_state(&dir_file, &name, &path, &header, kind)?;
        let old = match kind {
            Kind::Send => find_old_states(&dir_file, dir, &name, domain, &sa, key, mac_key)?,
            Kind::Receive => Vec::new(),
        };
        let record = match &opts.used_record {
            Some(p) => Some(UsedRecord::read(p, &fp)?),
            None => None,
        };
        let old_max = old.iter().map(|o| o.reserved).max();
        let fresh = on_disk.is_none() && old.is_empty();
        if fresh {
            warn_fresh_start(&record, &opts, warn_fresh, dir, &path, domain, &sa)?;
        }
        let (limit, configured_limit) = match opts.seq_limit {
            Some(l) if l < opts.protocol_max => (l, true),
            _ => (opts.protocol_max, false),
        };
        let lock_id = file_id(&lock).map_err(|err| HwError::Io {
            path: dir.join(&lock_name),
            what: "reading the lock file",
            err,
        })?;
        let mut hw = HighWater {
            dir: dir.to_path_buf(),
            dir_file,
            dir_id,
            path,
            name,
            tmp_name,
            lock_name,
            lock,
            lock_id,
            header,
            kind,
            fingerprint: fp,
            domain: domain.to_string(),
            sa,
            record,
            record_note: None,
            reserved: on_disk.unwrap_or(0),
            block: opts.block,
            block_cap: if opts.grow && kind == Kind::Send {
                grow_cap(opts.block, limit)
            } else {
                opts.block
            },
            last_write: None,
            limit,
            configured_limit,
            writes: 0,
            fresh,
            migrated: Vec::new(),
        };
        if let Some(m) = old_max {
            hw.take_over(&old, m, on_disk.is_none())?;
        }
        drop(old);
        drop(guard);
        Ok(hw)
    }

    /// Takes over the previous version's marks under other spellings (`old`, the highest `m`):
    /// this state continues above the highest, and their files become `moved` notes the
    /// previous version refuses.
    fn take_over(&mut self, old: &[OldState], m: u64, none_on_disk: bool) -> Result<(), HwError> {
        let mark = m.max(self.reserved);
        if mark > self.reserved || none_on_disk {
            self.write_mark(mark)?;
            self.reserved = mark;
        }
        for o in old {
            let stem = o.name.trim_end_matches(".hw");
            let note = format!("{MOVED_MAGIC}\nto {}\nreserved {}\n", self.name, o.reserved);
            write_atomic(
                &self.dir_file,
                &format!("{stem}.hw.tmp"),
                &o.name,
                &note,
                &self.dir,
            )?;
        }
        self.sync_dir()?;
        self.migrated = old.iter().map(|o| o.name.clone()).collect();
        eprintln!(
            "ivnsec: note: nonce state of {} SA `{}` taken over from {} (written \
             under another spelling of the profile by an earlier version); it continues \
             above {mark} in {}",
            self.domain,
            self.sa,
            self.migrated.join(", "),
            self.path.display()
        );
        Ok(())
    }

    /// The number the SA must start at: one above everything reserved before. An error when no
    /// number is left under the limit.
    pub fn first_seq(&self) -> Result<u64, HwError> {
        match self.reserved.checked_add(1) {
            Some(n) if n <= self.limit => Ok(n),
            _ => Err(self.exhausted()),
        }
    }

    /// Adds `| note` to this SA's entry in the used-key record when the first reservation
    /// writes it (e.g. the SCI an XPN SSCI is bound to). No effect once the entry exists.
    pub fn set_record_note(&mut self, note: &str) {
        self.record_note = Some(note.replace(['\n', '\r', '|'], " "));
    }

    /// The state file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The nonce domain the state is keyed by.
    pub fn domain(&self) -> &str {
        &self.domain
    }

    /// Highest number reserved on disk.
    pub fn reserved(&self) -> u64 {
        self.reserved
    }

    /// Numbers the next reservation takes: `--reserve-block`, or more once a fast stream grew
    /// it ([`Options::grow`]).
    pub fn block(&self) -> u64 {
        self.block
    }

    /// Highest number this SA may use (the smaller of the configured and the protocol limit).
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Reservations this process wrote.
    pub fn writes(&self) -> u64 {
        self.writes
    }

    /// Whether no state was found (the SA starts at 1; a warning said so).
    pub fn is_fresh(&self) -> bool {
        self.fresh
    }

    /// State files of the previous version this state took over (their names).
    pub fn migrated(&self) -> &[String] {
        &self.migrated
    }

    fn exhausted(&self) -> HwError {
        HwError::Exhausted {
            limit: self.limit,
            configured: self.configured_limit,
        }
    }

    /// Must be called before a unit carrying `seq` is protected: a compare, and a durable
    /// reservation of the next block when `seq` passes the reserved mark.
    #[inline]
    pub fn claim(&mut self, seq: u64) -> Result<(), HwError> {
        if seq > self.limit || seq == 0 {
            return Err(self.exhausted());
        }
        if seq > self.reserved {
            self.reserve(seq)?;
        }
        Ok(())
    }

    /// Reserves ahead while the sender is idle: when `next` (the number the next unit will
    /// carry) has used half of the block reserved for it, the next block is reserved now, so
    /// the unit that reaches the mark does not wait for the durable write. A data plane calls
    /// it when its queue ran empty; [`claim`](Self::claim) stays what guards every number.
    /// Returns whether a reservation was written.
    pub fn top_up(&mut self, next: u64) -> Result<bool, HwError> {
        if next == 0 || next > self.limit || self.reserved >= self.limit {
            return Ok(false);
        }
        let half = (self.block / 2).max(1);
        if self.reserved.saturating_sub(next) >= half {
            return Ok(false);
        }
        let mark = (next - 1).saturating_add(self.block).min(self.limit);
        let before = self.writes;
        self.reserve_to(mark)?;
        Ok(self.writes > before)
    }

    /// Under the directory lock: checks that the state is still ours, then writes
    /// `reserved = min(seq − 1 + block, limit)` durably. Only after that may numbers up to the
    /// mark be used.
    #[cold]
    fn reserve(&mut self, seq: u64) -> Result<(), HwError> {
        let mark = (seq - 1).saturating_add(self.block).min(self.limit);
        self.reserve_to(mark)
    }

    /// Writes the mark `mark` (above the one on disk, at most the limit) under the directory
    /// lock after checking the state is still ours: a receiver's acceptance mark moves ahead
    /// by a block of its own choosing (`keys::rxmark`).
    #[cold]
    pub fn reserve_to(&mut self, mark: u64) -> Result<(), HwError> {
        if mark > self.limit {
            return Err(self.exhausted());
        }
        if mark <= self.reserved {
            return Ok(());
        }
        let guard = DirLock::take(&self.dir_file, &self.dir, "locking the state directory")?;
        self.check_still_ours()?;
        self.write_mark(mark)?;
        drop(guard);
        self.reserved = mark;
        self.writes += 1;
        if self.block < self.block_cap {
            let now = std::time::Instant::now();
            if self
                .last_write
                .is_some_and(|t| now.duration_since(t) < GROW_WITHIN)
            {
                self.block = self.block.saturating_mul(2).min(self.block_cap);
            }
            self.last_write = Some(now);
        }
        Ok(())
    }

    /// The directory at the path is the one locked, the lock file at its name is the one this
    /// process holds, and no other process wrote a mark above this one's.
    fn check_still_ours(&self) -> Result<(), HwError> {
        let lost = |why: String| HwError::LockLost {
            path: self.path.clone(),
            why,
        };
        match fs::metadata(&self.dir) {
            Ok(m) if (m.dev(), m.ino()) == self.dir_id => {}
            Ok(_) => {
                return Err(lost(format!(
                    "{} is no longer the directory this sender locked (it was moved or replaced)",
                    self.dir.display()
                )));
            }
            Err(e) => {
                return Err(lost(format!(
                    "the state directory {} is gone ({e})",
                    self.dir.display()
                )));
            }
        }
        let held = self.lock.metadata().map_err(|err| HwError::Io {
            path: self.dir.join(&self.lock_name),
            what: "reading the lock file",
            err,
        })?;
        let at_name = sys::stat_at(&self.dir_file, &self.lock_name);
        let why = match at_name {
            _ if held.nlink() == 0 => Some("the lock file this sender holds was deleted"),
            Err(ref e) if e.kind() == io::ErrorKind::NotFound => {
                Some("the lock file this sender holds was moved away")
            }
            Err(err) => {
                return Err(HwError::Io {
                    path: self.dir.join(&self.lock_name),
                    what: "checking the lock file",
                    err,
                });
            }
            Ok(st) if (st.dev, st.ino) != self.lock_id => {
                Some("the lock file was replaced by another file")
            }
            Ok(_) => None,
        };
        if let Some(w) = why {
            return Err(lost(format!(
                "{w} ({}), so the lock no longer keeps other senders out",
                self.dir.join(&self.lock_name).display()
            )));
        }
        if let Some(m) = read_state(
            &self.dir_file,
            &self.name,
            &self.path,
            &self.header,
            self.kind,
        )? && m > self.reserved
        {
            return Err(lost(format!(
                "another process wrote `reserved {m}` above this sender's {}",
                self.reserved
            )));
        }
        Ok(())
    }

    /// Records the key's use (first time), then writes the state file with `mark` durably:
    /// temporary file, fsync, rename, directory fsync.
    fn write_mark(&mut self, mark: u64) -> Result<(), HwError> {
        if let Some(r) = &mut self.record
            && r.entry.is_none()
        {
            // Where the state is, as an absolute path: what an operator needs to find it.
            let dir = fs::canonicalize(&self.dir).unwrap_or_else(|_| self.dir.clone());
            let mut info = format!(
                "{} | {} | {}",
                self.domain,
                self.sa,
                dir.join(&self.name).display()
            );
            if let Some(n) = &self.record_note {
                info.push_str(" | ");
                info.push_str(n);
            }
            if let Some(entry) = r.append(&self.fingerprint, &info)? {
                // Another sender of this SA under this key, with another state directory,
                // reserved since this one started: two senders would share every nonce.
                return Err(HwError::UsedKeyNoState {
                    state: self.dir.join(&self.name),
                    record: r.path.clone(),
                    entry,
                });
            }
        }
        let content = format!("{}{} {mark}\n", self.header, self.kind.value_key());
        write_atomic(
            &self.dir_file,
            &self.tmp_name,
            &self.name,
            &content,
            &self.dir,
        )?;
        self.sync_dir()
    }

    fn sync_dir(&self) -> Result<(), HwError> {
        self.dir_file.sync_all().map_err(|err| HwError::Io {
            path: self.dir.clone(),
            what: "fsync of the state directory",
            err,
        })
    }
}

/// The mark of a state file whose other lines must equal `header`.
fn parse(text: &str, header: &str, kind: Kind) -> Result<u64, String> {
    let Some(rest) = text.strip_prefix(header) else {
        let first = text.lines().next().unwrap_or("");
        return Err(if first == MOVED_MAGIC {
            "its mark was moved to another state file; this file is only a note".to_string()
        } else if first != kind.magic() {
            format!(
                "not an ivnsec {} file (first line `{first}`, expected `{}`)",
                match kind {
                    Kind::Send => "nonce state",
                    Kind::Receive => "acceptance mark",
                },
                kind.magic()
            )
        } else {
            "its profile, SA or key fingerprint does not match the file name".to_string()
        });
    };
    let line = rest
        .strip_suffix('\n')
        .ok_or("truncated (no final newline)")?;
    let key = kind.value_key();
    let value = line
        .strip_prefix(key)
        .and_then(|v| v.strip_prefix(' '))
        .ok_or_else(|| format!("expected a `{key} N` line, found `{line}`"))?;
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("`{key} {value}` is not a number"));
    }
    value
        .parse::<u64>()
        .map_err(|_| format!("`{key} {value}` is out of range"))
}

#[cfg(test)]
#[path = "highwater_tests.rs"]
mod tests;
