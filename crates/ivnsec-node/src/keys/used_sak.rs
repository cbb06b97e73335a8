//! The used-SAK record of an MKA member (docs/mka.md, "A SAK met again without its state"):
//! which SAKs this member (by SCI) has transmitted under, kept beside its CAK source — the
//! `--psk` file, or the private key of `--keyserver` — and not in `--state-dir`, so that a lost
//! state directory is noticed instead of a SAK handed out again being started at PN 1.
//!
//! ```text
//! ivnsec-used-saks 1
//! # comment lines
//! sak <64 hex: fingerprint of (nonce domain, SCI, SAK)> <what: sci, key number, AN, state file>
//! ```
//!
//! The fingerprint is [`highwater::fingerprint`] over (the nonce domain, `mka sak sci
//! <SCI>`, the SAK, nothing): the SAK itself is never written. The record is read with a bound
//! ([`MAX_RECORD`]), never through a symbolic link, and must be a regular file of this user
//! that nobody else may write; any other line makes it corrupt (refused). It is appended to,
//! fsynced, under a short `flock` (members of several namespaces of one host may share a PSK
//! file). Past [`COMPACT_AT`] bytes it is rewritten with its newest [`KEEP`] entries (a key
//! server only ever hands out again the SAK its CA still uses).

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use ivnsec_core::wire::macsec::Sci;
use ivnsec_net::sys::{self, OpenAt};

use super::highwater::{self, DirLock, HwError, check_record_file, read_bounded};

/// First line of the record.
pub const MAGIC: &str = "ivnsec-used-saks 1";
/// Largest record read (about 7,000 entries).
pub const MAX_RECORD: u64 = 1 << 20;
/// A record longer than this is rewritten with its newest [`KEEP`] entries before an append.
pub const COMPACT_AT: u64 = 768 * 1024;
/// Entries kept when the record is compacted.
pub const KEEP: usize = 2048;
const WHAT: &str = "used-SAK record";
const HEADER: &str = "# The SAKs members have transmitted under with the CAK source beside this \
    file (by fingerprint of the nonce domain, the member's SCI and the SAK; docs/mka.md).\n# Keep \
    it with the CAK source: a member refuses to transmit under a SAK listed here whose nonce \
    state is missing.\n";

/// The record beside a CAK source: `FILE.used`.
pub fn record_path(cak_source: &Path) -> PathBuf {
    let mut name = cak_source.file_name().unwrap_or_default().to_os_string();
    name.push(".used");
    cak_source.with_file_name(name)
}

/// The fingerprint that names (SAK, SCI) in the record.
pub fn fingerprint(domain: &str, sci: Sci, sak: &[u8]) -> String {
    let b = sci.0;
    let sa = format!(
        "mka sak sci {:02x}{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}",
        b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]
    );
    highwater::fingerprint(domain, &sa, sak, &[])
}

fn split(path: &Path) -> Result<(PathBuf, String), HwError> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| HwError::BadOption(format!("{}: not a file name", path.display())))?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok((dir, name.to_string()))
}

fn io_err(path: &Path, what: &'static str) -> impl FnOnce(io::Error) -> HwError {
    let path = path.to_path_buf();
    move |err| HwError::Io { path, what, err }
}

fn open_err(path: &Path, what: &'static str, e: io::Error) -> HwError {
    if sys::is_symlink_error(&e) {
        HwError::Unsafe {
            path: path.to_path_buf(),
            why: format!("the {WHAT} is a symbolic link"),
        }
    } else {
        io_err(path, what)(e)
    }
}

/// The entries of a record's text: (fingerprint, what follows it), oldest first.
fn parse(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut lines = text.lines().enumerate();
    match lines.next() {
        Some((_, MAGIC)) => {}
        Some((_, l)) => return Err(format!("first line `{l}`, expected `{MAGIC}`")),
        None => return Err("empty".to_string()),
    }
    let mut out = Vec::new();
    for (i, l) in lines {
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let entry = l.strip_prefix("sak ").and_then(|rest| {
            let (f, info) = rest.split_once(' ').unwrap_or((rest, ""));
            (f.len() == 64 && f.bytes().all(|b| b.is_ascii_hexdigit()))
                .then(|| (f.to_ascii_lowercase(), info.to_string()))
        });
        match entry {
            Some(e) => out.push(e),
            None => return Err(format!("line {}: `{l}`", i + 1)),
        }
    }
    if !text.ends_with('\n') {
        return Err("truncated (no final newline)".to_string());
    }
    Ok(out)
}

/// Reads the record of an open file (checked: regular, ours, not writable by others; bounded).
fn read_open(f: &File, path: &Path) -> Result<Vec<(String, String)>, HwError> {
    check_record_file(f, path, WHAT)?;
    let text = read_bounded(
        f.try_clone()
            .map_err(io_err(path, "reading the used-SAK record"))?,
        MAX_RECORD,
    )
    .map_err(io_err(path, "reading the used-SAK record"))?
    .map_err(|why| HwError::Corrupt {
        path: path.to_path_buf(),
        why: format!("{WHAT}: {why}"),
    })?;
    if text.is_empty() {
        return Ok(Vec::new()); // created by an append that has not written yet
    }
    parse(&text).map_err(|why| HwError::Corrupt {
        path: path.to_path_buf(),
        why: format!("{WHAT}: {why}"),
    })
}

/// The entry of `fp` in the record at `path`, if listed (a missing record lists nothing).
pub fn lookup(path: &Path, fp: &str) -> Result<Option<String>, HwError> {
    let (dir, name) = split(path)?;
    let d = match File::open(&dir) {
        Ok(d) => d,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err(path, "opening the directory of the used-SAK record")(e)),
    };
    let f = match sys::open_at(&d, &name, OpenAt::Read, 0) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(open_err(path, "reading the used-SAK record", e)),
    };
    Ok(read_open(&f, path)?
        .into_iter()
        .rev()
        .find(|(f, _)| f == fp)
        .map(|(_, info)| info))
}

/// Appends `sak <fp> <info>` durably (the file fsynced; the directory too when the record is
/// new or rewritten), under the record's `flock`. A record past [`COMPACT_AT`] is first
/// rewritten (temporary file, fsync, rename) with its newest [`KEEP`] entries.
pub fn record(path: &Path, fp: &str, info: &str) -> Result<(), HwError> {
    let (dir, name) = split(path)?;
    let d = File::open(&dir).map_err(io_err(
        path,
        "opening the directory of the used-SAK record (it must exist and be writable)",
    ))?;
    let clean: String = info
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let line = format!("sak {fp} {clean}\n");
    // A writer that compacted may have replaced the file between our open and our lock:
    // append only to the file that is at the name while we hold its lock.
    for _ in 0..8 {
        let mut f = sys::open_at(&d, &name, OpenAt::AppendCreate, 0o600).map_err(|e| {
            open_err(
                path,
                "recording the SAK (the directory of the used-SAK record must be writable)",
                e,
            )
        })?;
        check_record_file(&f, path, WHAT)?;
        let lock = DirLock::take(&f, path, "locking the used-SAK record")?;
        let held = f
            .metadata()
            .map_err(io_err(path, "reading the used-SAK record"))?;
        match sys::stat_at(&d, &name) {
            Ok(st) if (st.dev, st.ino) == (held.dev(), held.ino()) => {}
            Ok(_) => continue,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io_err(path, "checking the used-SAK record")(e)),
        }
        // The append descriptor is write-only: read what it holds through a second one, which
        // must be the same file.
        let r = sys::open_at(&d, &name, OpenAt::Read, 0)
            .map_err(|e| open_err(path, "reading the used-SAK record", e))?;
        let rm = r
            .metadata()
            .map_err(io_err(path, "reading the used-SAK record"))?;
        if (rm.dev(), rm.ino()) != (held.dev(), held.ino()) {
            continue;
        }
        let entries = read_open(&r, path)?;
        let len = held.len();
        if len > 0 && len + line.len() as u64 > COMPACT_AT {
            let keep = &entries[entries.len().saturating_sub(KEEP)..];
            let mut text = format!("{MAGIC}\n{HEADER}");
            for (fp, info) in keep {
                text.push_str(&format!("sak {fp} {info}\n"));
            }
            text.push_str(&line);
            let tmp = format!("{name}.tmp");
            match sys::unlink_at(&d, &tmp) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(io_err(path, "removing a stale temporary record")(e)),
            }
            let mut t = sys::open_at(&d, &tmp, OpenAt::CreateNew, 0o600)
                .map_err(|e| open_err(path, "creating the compacted used-SAK record", e))?;
            t.write_all(text.as_bytes())
                .and_then(|_| t.sync_all())
                .map_err(io_err(path, "writing the compacted used-SAK record"))?;
            sys::rename_at(&d, &tmp, &name)
                .map_err(io_err(path, "replacing the used-SAK record"))?;
            d.sync_all()
                .map_err(io_err(path, "fsync of the used-SAK record's directory"))?;
            drop(lock);
            return Ok(());
        }
        let mut text = String::new();
        if len == 0 {
            text.push_str(MAGIC);
            text.push('\n');
            text.push_str(HEADER);
        }
        text.push_str(&line);
        f.write_all(text.as_bytes())
            .and_then(|_| f.sync_all())
            .map_err(io_err(path, "writing the used-SAK record"))?;
        drop(lock);
        if len == 0 {
            d.sync_all()
                .map_err(io_err(path, "fsync of the used-SAK record's directory"))?;
        }
        return Ok(());
    }
    Err(HwError::LockLost {
        path: path.to_path_buf(),
        why: "the used-SAK record was replaced again and again while this member tried to \
              append to it"
            .to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::DirBuilder;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};

    struct Dir(PathBuf);
    impl Dir {
        fn new(tag: &str) -> Dir {
            let mut r = [0u8; 6];
            getrandom::fill(&mut r).unwrap();
            let p = std::env::temp_dir().join(format!("ivnsec-usedsak-{tag}-{}", hex::encode(r)));
            DirBuilder::new().mode(0o700).create(&p).unwrap();
            Dir(p)
        }
        fn record(&self) -> PathBuf {
            record_path(&self.0.join("ca.psk"))
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn write(path: &Path, text: &str, mode: u32) {
        let _ = std::fs::remove_file(path);
        let mut f = std::fs::OpenOptions::new()
            .create_new(true)
            .write(true)
            .mode(mode)
            .open(path)
            .unwrap();
        f.write_all(text.as_bytes()).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    const SCI_A: u64 = 0x0200_0000_000a_0001;

    #[test]
    fn the_record_lists_a_sak_per_sci_by_fingerprint_never_the_key() {
        let d = Dir::new("list");
        let rec = d.record();
        assert_eq!(rec.file_name().unwrap(), "ca.psk.used");
        let sak = [0x3c; 16];
        let a = fingerprint("macsec-gcm-aes-128", Sci::from_u64(SCI_A), &sak);
        let b = fingerprint("macsec-gcm-aes-128", Sci::from_u64(SCI_A + 0x10000), &sak);
        assert_ne!(a, b, "one SAK, two members: two entries");
        assert_eq!(lookup(&rec, &a).unwrap(), None, "no record lists nothing");
        record(&rec, &a, "sci 02000000000a0001 key-number 1\nan 0").unwrap();
        assert_eq!(
            lookup(&rec, &a).unwrap().as_deref(),
            Some("sci 02000000000a0001 key-number 1 an 0"),
            "control characters are not written"
        );
        assert_eq!(lookup(&rec, &b).unwrap(), None);
        record(&rec, &b, "sci b").unwrap();
        let text = std::fs::read_to_string(&rec).unwrap();
        assert!(text.starts_with("ivnsec-used-saks 1\n#"), "{text}");
        assert_eq!(text.matches(MAGIC).count(), 1);
        assert!(
            !text.contains(&hex::encode(sak)),
            "the SAK never reaches the record"
        );
        let m = std::fs::metadata(&rec).unwrap();
        assert_eq!(m.mode() & 0o777, 0o600);
    }

    #[test]
    fn corrupt_linked_open_and_oversized_records_are_refused() {
        let d = Dir::new("bad");
        let rec = d.record();
        let fp = "ab".repeat(32);
        let ok = format!("{MAGIC}\n# c\n\nsak {fp} sci x\n");
        write(&rec, &ok, 0o600);
        assert_eq!(lookup(&rec, &fp).unwrap().as_deref(), Some("sci x"));
        for bad in [
            "ivnsec-used-keys 1\n".to_string(),
            format!("{MAGIC}\nused {fp} x\n"),
            format!("{MAGIC}\nsak {} x\n", "ab".repeat(31)),
            format!("{MAGIC}\nsak {} x\n", "zz".repeat(32)),
            format!("{MAGIC}\nsak {fp} x"),
            "\n".to_string(),
        ] {
            write(&rec, &bad, 0o600);
            let e = lookup(&rec, &fp).unwrap_err();
            assert!(matches!(e, HwError::Corrupt { .. }), "{bad:?}: {e}");
            assert!(
                record(&rec, &fp, "x").is_err(),
                "no append to a corrupt record"
            );
        }
        // Too long to be read: corrupt, not truncated into a guess.
        let mut big = format!("{MAGIC}\n");
        while (big.len() as u64) <= MAX_RECORD {
            big.push_str(&format!("# {}\n", "x".repeat(200)));
        }
        write(&rec, &big, 0o600);
        let e = lookup(&rec, &fp).unwrap_err();
        assert!(e.to_string().contains("larger than"), "{e}");
        // Writable by others.
        write(&rec, &ok, 0o622);
        let e = lookup(&rec, &fp).unwrap_err();
        assert!(matches!(e, HwError::Unsafe { .. }), "{e}");
        assert!(record(&rec, &fp, "x").is_err());
        // A symbolic link is never followed, for reading or for appending.
        std::fs::remove_file(&rec).unwrap();
        let target = d.0.join("elsewhere");
        write(&target, &ok, 0o600);
        std::os::unix::fs::symlink(&target, &rec).unwrap();
        let e = lookup(&rec, &fp).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        let e = record(&rec, &fp, "y").unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), ok);
    }

    #[test]
    fn a_long_record_keeps_its_newest_entries() {
        let d = Dir::new("compact");
        let rec = d.record();
        let info = "x".repeat(300);
        let mut text = format!("{MAGIC}\n");
        let mut n = 0u64;
        while (text.len() as u64) < COMPACT_AT {
            text.push_str(&format!("sak {:064x} {info}\n", n));
            n += 1;
        }
        write(&rec, &text, 0o600);
        let newest = format!("{:064x}", n - 1);
        let oldest = format!("{:064x}", 0);
        let fp = "cd".repeat(32);
        record(&rec, &fp, "new").unwrap();
        assert_eq!(lookup(&rec, &fp).unwrap().as_deref(), Some("new"));
        assert!(lookup(&rec, &newest).unwrap().is_some());
        assert_eq!(lookup(&rec, &oldest).unwrap(), None);
        let after = std::fs::read_to_string(&rec).unwrap();
        assert_eq!(
            after.lines().filter(|l| l.starts_with("sak ")).count(),
            KEEP + 1
        );
        assert_eq!(std::fs::metadata(&rec).unwrap().mode() & 0o777, 0o600);
        assert!(!d.0.join("ca.psk.used.tmp").exists());
    }
}
