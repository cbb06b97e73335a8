//! Nonce safety across restarts: a persistent high-water mark of the sequence numbers / PNs one
//! outbound SA may have used (docs/nonce-safety.md).
//!
//! Every AEAD nonce of our SAs is derived from a per-key constant and the sequence number, so a
//! sender that restarts under the same key and counts from 1 again reuses nonces, which breaks
//! GCM and ChaCha20-Poly1305 outright. [`HighWater`] keeps, in a state directory, the highest
//! number the SA has *reserved*. Numbers are reserved ahead in blocks, and a reservation is on
//! disk (temporary file written, fsynced, renamed over the state file, directory fsynced) before
//! any number of it goes out. After a crash — even `kill -9` or a power cut — the sender resumes
//! at `reserved + 1`: it may skip up to a block of numbers, it never repeats one.
//!
//! The state file is named after a fingerprint of (profile, SA identity, a one-way hash of the
//! key material); it never holds the key. An exclusive `flock` on a sibling `.lock` file keeps a
//! second process from sending under the same state. A missing file means a fresh key (start
//! at 1); a file that cannot be parsed is refused, never guessed around.
//!
//! File I/O happens only when a block runs out ([`HighWater::claim`] is a compare otherwise).

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use ivnsec_core::crypto::{MAX_MAC_LEN, MacAlg};

use super::channel::DirectionKeys;
use crate::cli::{EnvError, UsageError};

/// Default size of a reservation block (`--reserve-block`).
pub const DEFAULT_BLOCK: u64 = 4096;
/// First line of every state file.
const MAGIC: &str = "ivnsec-highwater 1";
/// Key of the HMAC-SHA256 that fingerprints an SA (a fixed label: the fingerprint is a one-way
/// function of the key material, domain-separated from every other use of it).
const FINGERPRINT_LABEL: &[u8] = b"ivnsec highwater fingerprint v1";

/// Settings of a [`HighWater`].
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Numbers reserved per write (≥ 1).
    pub block: u64,
    /// Highest number the user allows under this key (`--seq-limit`), if any.
    pub seq_limit: Option<u64>,
    /// Highest number the protocol can carry (2^32 − 1 for MACsec without XPN and ESP without
    /// ESN, 2^64 − 1 otherwise).
    pub protocol_max: u64,
}

/// Why a reservation failed.
#[derive(Debug)]
pub enum HwError {
    /// The state file exists but is not a valid state file of this SA.
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
    /// Bad options (block 0, limit 0).
    BadOption(String),
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
        }
    }
}

impl std::error::Error for HwError {}

impl HwError {
    /// Into the exit-code convention: corrupt, locked and bad options are configuration errors
    /// (2), I/O is the environment (3), exhaustion is a refusal to send (1).
    pub fn into_anyhow(self) -> anyhow::Error {
        match self {
            HwError::Corrupt { .. } | HwError::Locked { .. } | HwError::BadOption(_) => {
                anyhow::Error::new(UsageError(self.to_string()))
            }
            HwError::Io { .. } => anyhow::Error::new(EnvError(self.to_string())),
            HwError::Exhausted { .. } => anyhow::Error::new(self),
        }
    }
}

/// Hex HMAC-SHA256 fingerprint of (profile, SA identity, cipher key, MAC key), over the decoded
/// key bytes (so `0x…` and `aa:bb…` spellings of one key share one state). Only this one-way
/// value reaches the disk. The IV / salt is deliberately left out: changing it under the same
/// key must not restart the counter (for IVN-AE, nonce = iv XOR seq, so two IVs under one key
/// can still collide; only monotonic numbers are safe).
pub fn fingerprint(profile: &str, sa_identity: &str, key: &[u8], mac_key: &[u8]) -> String {
    let mac = ivnsec_crypto_portable::PROVIDER
        .keys
        .mac(MacAlg::HmacSha256, FINGERPRINT_LABEL)
        .expect("the portable provider has HMAC-SHA256");
    // Length-prefixed parts, so no two different inputs concatenate to the same bytes.
    let fields: [&[u8]; 4] = [profile.as_bytes(), sa_identity.as_bytes(), key, mac_key];
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

/// The reservation of one outbound SA; holds the lock while it lives.
#[derive(Debug)]
pub struct HighWater {
    dir: PathBuf,
    path: PathBuf,
    tmp: PathBuf,
    /// Keeps the `flock` (released when the process ends, however it ends).
    _lock: File,
    /// The lines of the file other than `reserved` (magic, profile, SA, fingerprint).
    header: String,
    /// Highest number reserved on disk: every number ≤ it may have been used.
    reserved: u64,
    block: u64,
    limit: u64,
    configured_limit: bool,
    /// Reservations written by this process.
    writes: u64,
}

impl HighWater {
    /// Opens (or starts) the state of the SA `sa_identity` of `profile` under `keys` in `dir`
    /// (created if missing) and locks it.
    pub fn open(
        dir: &Path,
        profile: &str,
        sa_identity: &str,
        keys: &DirectionKeys,
        opts: Options,
    ) -> Result<HighWater, HwError> {
        if opts.block == 0 {
            return Err(HwError::BadOption(
                "--reserve-block must be at least 1".to_string(),
            ));
        }
        if opts.seq_limit == Some(0) {
            return Err(HwError::BadOption(
                "--seq-limit must be at least 1 (sequence numbers start at 1)".to_string(),
            ));
        }
        let io = |path: &Path, what: &'static str| {
            let path = path.to_path_buf();
            move |err| HwError::Io { path, what, err }
        };
        fs::create_dir_all(dir).map_err(io(dir, "creating the state directory"))?;
        let bytes = |what: &str, h: &str| {
            crate::cli::parse_hex(what, h).map_err(|e| HwError::BadOption(format!("{e:#}")))
        };
        let fp = fingerprint(
            profile,
            sa_identity,
            &bytes("key", &keys.key)?,
            &bytes("mac_key", &keys.mac_key)?,
        );
        let safe_profile: String = profile
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let stem = format!("{safe_profile}-{}", &fp[..32]);
        let path = dir.join(format!("{stem}.hw"));
        let tmp = dir.join(format!("{stem}.hw.tmp"));
        let lock_path = dir.join(format!("{stem}.lock"));
        let mut lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&lock_path)
            .map_err(io(&lock_path, "opening the lock file"))?;
        match ivnsec_net::sys::try_lock_exclusive(&lock) {
            Ok(true) => {}
            Ok(false) => return Err(HwError::Locked { path }),
            Err(e) => return Err(io(&lock_path, "locking")(e)),
        }
        // For people looking: who holds it (informational; the flock is what counts).
        let _ = lock
            .set_len(0)
            .and_then(|_| lock.write_all(format!("{}\n", std::process::id()).as_bytes()));
        let header = format!(
            "{MAGIC}\nprofile {profile}\nsa {}\nfingerprint {fp}\n",
            sa_identity.replace('\n', " ")
        );
        let reserved = match fs::read_to_string(&path) {
            Ok(text) => parse(&text, &header).map_err(|why| HwError::Corrupt {
                path: path.clone(),
                why,
            })?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => 0,
            Err(e) => return Err(io(&path, "reading")(e)),
        };
        let (limit, configured_limit) = match opts.seq_limit {
            Some(l) if l < opts.protocol_max => (l, true),
            _ => (opts.protocol_max, false),
        };
        Ok(HighWater {
            dir: dir.to_path_buf(),
            path,
            tmp,
            _lock: lock,
            header,
            reserved,
            block: opts.block,
            limit,
            configured_limit,
            writes: 0,
        })
    }

    /// The number the SA must start at: one above everything reserved before. An error when no
    /// number is left under the limit.
    pub fn first_seq(&self) -> Result<u64, HwError> {
        match self.reserved.checked_add(1) {
            Some(n) if n <= self.limit => Ok(n),
            _ => Err(self.exhausted()),
        }
    }

    /// The state file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Highest number reserved on disk.
    pub fn reserved(&self) -> u64 {
        self.reserved
    }

    /// Highest number this SA may use (the smaller of the configured and the protocol limit).
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Reservations this process wrote.
    pub fn writes(&self) -> u64 {
        self.writes
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

    /// Writes `reserved = min(seq − 1 + block, limit)` durably: temporary file, fsync, rename,
    /// directory fsync. Only after all four succeeded may numbers up to the mark be used.
    #[cold]
    fn reserve(&mut self, seq: u64) -> Result<(), HwError> {
        let mark = (seq - 1).saturating_add(self.block).min(self.limit);
        let content = format!("{}reserved {mark}\n", self.header);
        let tmp = &self.tmp;
        let err = |what: &'static str| {
            let path = tmp.clone();
            move |err| HwError::Io { path, what, err }
        };
        {
            let mut f = OpenOptions::new()
                .create(true)
                .truncate(true)
                .write(true)
                .open(tmp)
                .map_err(err("creating the temporary file"))?;
            f.write_all(content.as_bytes())
                .map_err(err("writing the temporary file"))?;
            f.sync_all().map_err(err("fsync of the temporary file"))?;
        }
        fs::rename(tmp, &self.path).map_err(|err| HwError::Io {
            path: self.path.clone(),
            what: "renaming the temporary file over the state file",
            err,
        })?;
        File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(|err| HwError::Io {
                path: self.dir.clone(),
                what: "fsync of the state directory",
                err,
            })?;
        self.reserved = mark;
        self.writes += 1;
        Ok(())
    }
}

/// The reserved mark of a state file whose other lines must equal `header`.
fn parse(text: &str, header: &str) -> Result<u64, String> {
    let Some(rest) = text.strip_prefix(header) else {
        let first = text.lines().next().unwrap_or("");
        return Err(if first != MAGIC {
            format!("not an ivnsec nonce state file (first line `{first}`, expected `{MAGIC}`)")
        } else {
            "its profile, SA or key fingerprint does not match the file name".to_string()
        });
    };
    let line = rest
        .strip_suffix('\n')
        .ok_or("truncated (no final newline)")?;
    let value = line
        .strip_prefix("reserved ")
        .ok_or_else(|| format!("expected a `reserved N` line, found `{line}`"))?;
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("`reserved {value}` is not a number"));
    }
    value
        .parse::<u64>()
        .map_err(|_| format!("`reserved {value}` is out of range"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::channel::{Channel, ChannelOptions, Ends, Family};
    use crate::providers::ProviderChoice;
    use std::net::Ipv4Addr;

    struct Dir(PathBuf);
    impl Dir {
        fn new(tag: &str) -> Dir {
            let mut r = [0u8; 6];
            getrandom::fill(&mut r).unwrap();
            let p = std::env::temp_dir().join(format!("ivnsec-hw-{tag}-{}", hex::encode(r)));
            Dir(p)
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn keys() -> DirectionKeys {
        DirectionKeys {
            key: "00112233445566778899aabbccddeeff".into(),
            mac_key: String::new(),
            iv: "0102030405060708090a0b0c".into(),
        }
    }

    fn opts(block: u64) -> Options {
        Options {
            block,
            seq_limit: None,
            protocol_max: u64::MAX,
        }
    }

    fn open(d: &Dir, o: Options) -> Result<HighWater, HwError> {
        HighWater::open(&d.0, "aes128-gcm", "ivnae key-id 1", &keys(), o)
    }

    #[test]
    fn reservation_survives_reopen_and_never_goes_back() {
        let d = Dir::new("reopen");
        let mut hw = open(&d, opts(10)).unwrap();
        assert_eq!(hw.first_seq().unwrap(), 1, "missing file = fresh key");
        for seq in 1..=13 {
            hw.claim(seq).unwrap();
        }
        assert_eq!(hw.reserved(), 20);
        assert_eq!(hw.writes(), 2);
        drop(hw);
        // The restart resumes above everything reserved, although only 13 were used.
        let mut hw = open(&d, opts(10)).unwrap();
        assert_eq!(hw.first_seq().unwrap(), 21);
        hw.claim(21).unwrap();
        assert_eq!(hw.reserved(), 30);
        drop(hw);
        // Nothing used after the reservation: the next run still starts above it.
        let hw = open(&d, opts(10)).unwrap();
        assert_eq!(hw.first_seq().unwrap(), 31);
    }

    #[test]
    fn file_content_after_each_reservation() {
        let d = Dir::new("content");
        let mut hw = open(&d, opts(4096)).unwrap();
        let path = hw.path().to_path_buf();
        assert!(!path.exists(), "nothing written before the first claim");
        hw.claim(1).unwrap();
        let text = fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], MAGIC);
        assert_eq!(lines[1], "profile aes128-gcm");
        assert_eq!(lines[2], "sa ivnae key-id 1");
        assert!(lines[3].starts_with("fingerprint "));
        assert_eq!(lines[4], "reserved 4096");
        assert_eq!(lines.len(), 5);
        // The key is not in the file, in any form we could grep for.
        assert!(!text.contains(&keys().key) && !text.contains(&keys().iv));
        // No temporary file is left behind; the lock file is.
        assert!(!hw.tmp.exists());
        for seq in 2..=4096 {
            hw.claim(seq).unwrap();
        }
        assert_eq!(hw.writes(), 1, "no I/O inside a block");
        hw.claim(4097).unwrap();
        assert!(
            fs::read_to_string(&path)
                .unwrap()
                .ends_with("reserved 8192\n")
        );
        assert_eq!(hw.writes(), 2);
        // A different key gets a different file.
        let mut k2 = keys();
        k2.key = "ff112233445566778899aabbccddeeff".into();
        let hw2 = HighWater::open(&d.0, "aes128-gcm", "ivnae key-id 1", &k2, opts(1)).unwrap();
        assert_ne!(hw2.path(), hw.path());
        assert_eq!(hw2.first_seq().unwrap(), 1);
    }

    /// Another spelling of the same key, or another IV under it, must find the same state (a new
    /// file would restart at 1); another SA identity under the same key gets its own.
    #[test]
    fn the_state_follows_the_key_bytes_not_their_spelling() {
        let d = Dir::new("spelling");
        let mut hw = open(&d, opts(8)).unwrap();
        hw.claim(1).unwrap();
        let path = hw.path().to_path_buf();
        drop(hw);
        let mut k = keys();
        k.key = "0x00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF".into();
        k.iv = "ffffffffffffffffffffffff".into();
        let hw = HighWater::open(&d.0, "aes128-gcm", "ivnae key-id 1", &k, opts(8)).unwrap();
        assert_eq!(hw.path(), path);
        assert_eq!(hw.first_seq().unwrap(), 9);
        drop(hw);
        let other = HighWater::open(&d.0, "aes128-gcm", "ivnae key-id 2", &k, opts(8)).unwrap();
        assert_ne!(other.path(), path);
    }

    #[test]
    fn corrupt_files_are_refused() {
        let d = Dir::new("corrupt");
        let mut hw = open(&d, opts(8)).unwrap();
        hw.claim(1).unwrap();
        let path = hw.path().to_path_buf();
        let good = fs::read_to_string(&path).unwrap();
        drop(hw);
        let bad = [
            String::new(),
            "garbage\n".to_string(),
            good.replace("reserved 8\n", "reserved 8"),
            good.replace("reserved 8", "reserved -8"),
            good.replace("reserved 8", "reserved 99999999999999999999999"),
            good.replace("reserved 8", "reserved"),
            good.replace("profile aes128-gcm", "profile aes256-gcm"),
            good.replace("reserved 8\n", "reserved 8\nextra\n"),
        ];
        for b in bad {
            fs::write(&path, &b).unwrap();
            let e = open(&d, opts(8)).unwrap_err();
            assert!(matches!(e, HwError::Corrupt { .. }), "{b:?}: {e}");
            let msg = e.to_string();
            assert!(
                msg.contains(path.to_str().unwrap()) && msg.contains("refusing"),
                "{msg}"
            );
            assert_eq!(crate::cli::exit_code(&e.into_anyhow()), 2);
        }
    }

    #[test]
    fn a_second_opener_is_locked_out() {
        let d = Dir::new("lock");
        let hw = open(&d, opts(8)).unwrap();
        let e = open(&d, opts(8)).unwrap_err();
        assert!(matches!(e, HwError::Locked { .. }), "{e}");
        assert!(e.to_string().contains("locked by another process"));
        drop(hw);
        open(&d, opts(8)).expect("the lock is released with its holder");
    }

    #[test]
    fn bad_options_are_usage_errors() {
        let d = Dir::new("opts");
        for o in [
            opts(0),
            Options {
                seq_limit: Some(0),
                ..opts(1)
            },
        ] {
            let e = open(&d, o).unwrap_err();
            assert_eq!(crate::cli::exit_code(&e.into_anyhow()), 2);
        }
    }

    #[test]
    fn configured_limit_stops_exactly_there() {
        let d = Dir::new("limit");
        let o = Options {
            block: 3,
            seq_limit: Some(7),
            protocol_max: u64::MAX,
        };
        let mut hw = open(&d, o).unwrap();
        for seq in 1..=7 {
            hw.claim(seq).unwrap();
        }
        assert_eq!(hw.reserved(), 7, "the reservation never passes the limit");
        let e = hw.claim(8).unwrap_err();
        assert!(matches!(
            e,
            HwError::Exhausted {
                limit: 7,
                configured: true
            }
        ));
        assert!(e.to_string().contains("new key must be installed"), "{e}");
        assert_eq!(crate::cli::exit_code(&e.into_anyhow()), 1);
        drop(hw);
        let hw = open(&d, o).unwrap();
        assert!(matches!(hw.first_seq(), Err(HwError::Exhausted { .. })));
    }

    fn ends() -> Ends {
        Ends {
            local_mac: [2, 0, 0, 0, 0, 1],
            peer_mac: [2, 0, 0, 0, 0, 2],
            local_ip: Ipv4Addr::LOCALHOST,
            peer_ip: Ipv4Addr::LOCALHOST,
        }
    }

    /// The state says 2^32 − 3 for macsec-gcm-aes-128 (32-bit PN): exactly the two remaining
    /// PNs go out, then the sender stops with the exhaustion error instead of wrapping.
    #[test]
    fn macsec_sa_driven_to_the_protocol_limit() {
        let profile = "macsec-gcm-aes-128";
        let d = Dir::new("macsec");
        let k = DirectionKeys::random(profile).unwrap();
        let fam = Family::parse(profile).unwrap();
        let ident = crate::node::channel::sa_identity(fam, &ends(), 0);
        let o = Options {
            block: 4096,
            seq_limit: None,
            protocol_max: fam.max_seq(),
        };
        let hw = HighWater::open(&d.0, profile, &ident, &k, o).unwrap();
        let path = hw.path().to_path_buf();
        let header = hw.header.clone();
        drop(hw);
        let start = (1u64 << 32) - 3;
        fs::write(&path, format!("{header}reserved {start}\n")).unwrap();
        let mut hw = HighWater::open(&d.0, profile, &ident, &k, o).unwrap();
        let first = hw.first_seq().unwrap();
        assert_eq!(first, start + 1);
        let copts = ChannelOptions {
            replay_window: 0,
            first_seq: first,
            spi_offset: 0,
        };
        let mut ch =
            Channel::with_options(profile, ProviderChoice::Auto, &k, &k, ends(), 0, copts).unwrap();
        let mut rx =
            Channel::new(profile, ProviderChoice::Auto, &k, &k, ends().reversed(), 1).unwrap();
        let mut buf = vec![0u8; Channel::buffer_len(64)];
        let mut sent = Vec::new();
        let err = loop {
            let Some(seq) = ch.next_seq() else {
                break HwError::Exhausted {
                    limit: fam.max_seq(),
                    configured: false,
                };
            };
            if let Err(e) = hw.claim(seq) {
                break e;
            }
            let n = ch.protect(&[1u8; 64], &mut buf).unwrap();
            let pn = u32::from_be_bytes(buf[16..20].try_into().unwrap());
            sent.push(u64::from(pn));
            rx.verify(&mut buf, n).unwrap();
        };
        assert_eq!(sent, vec![(1 << 32) - 2, (1 << 32) - 1]);
        assert_eq!(hw.reserved(), u64::from(u32::MAX));
        assert!(err.to_string().contains("protocol's limit"), "{err}");
        assert!(
            err.to_string().contains("new key must be installed"),
            "{err}"
        );
        // The channel refuses too (belt and braces), and a restart refuses at once.
        assert!(ch.protect(&[1u8; 64], &mut buf).is_err());
        drop(hw);
        let hw = HighWater::open(&d.0, profile, &ident, &k, o).unwrap();
        assert!(matches!(hw.first_seq(), Err(HwError::Exhausted { .. })));
    }
}
