//! The used-key record beside a key file (`KEYFILE.used`), and the ownership check every record
//! beside a key source passes.

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use ivnsec_net::sys::{self, OpenAt};

use super::{DirLock, HwError, MAX_RECORD_FILE, RECORD_MAGIC, read_bounded};

/// A record beside a key source (the used-key record, an MKA member's used-SAK record) must be
/// a regular file of this user that nobody else may write: whoever can write it can erase the
/// entries that stop a sender from counting from 1 again.
pub(crate) fn check_record_file(f: &File, path: &Path, what: &str) -> Result<(), HwError> {
    let m = f.metadata().map_err(|err| HwError::Io {
        path: path.to_path_buf(),
        what: "reading the record's owner and mode",
        err,
    })?;
    let why = if !m.is_file() {
        format!("the {what} is not a regular file")
    } else if m.uid() != sys::effective_uid() {
        format!("the {what} belongs to uid {}, not to this user", m.uid())
    } else if m.mode() & 0o022 != 0 {
        format!(
            "the {what} is writable by group or others (mode {:o})",
            m.mode() & 0o7777
        )
    } else {
        return Ok(());
    };
    Err(HwError::Unsafe {
        path: path.to_path_buf(),
        why,
    })
}

/// The used-key record of one key (`KEYFILE.used`): which SAs (by fingerprint) have sent
/// under it. Lines: `ivnsec-used-keys 1`, `#` comments, `used <fingerprint> <where>`.
#[derive(Debug)]
pub(super) struct UsedRecord {
    pub(super) path: PathBuf,
    /// This SA's entry, if listed.
    pub(super) entry: Option<String>,
    /// Every entry: (fingerprint, what follows it).
    all: Vec<(String, String)>,
}

impl UsedRecord {
    fn dir_and_name(path: &Path) -> Result<(PathBuf, String), HwError> {
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

    fn check_file(&self, f: &File) -> Result<(), HwError> {
        check_record_file(f, &self.path, "used-key record")
    }

    /// Reads the record at `path` (missing: nothing listed) and finds `fp` in it.
    pub(super) fn read(path: &Path, fp: &str) -> Result<UsedRecord, HwError> {
        let mut r = UsedRecord {
            path: path.to_path_buf(),
            entry: None,
            all: Vec::new(),
        };
        let (dir, name) = UsedRecord::dir_and_name(path)?;
        let io_err = |what: &'static str| {
            let path = path.to_path_buf();
            move |err| HwError::Io { path, what, err }
        };
        let d = match File::open(&dir) {
            Ok(d) => d,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(r),
            Err(e) => return Err(io_err("opening the key file's directory")(e)),
        };
        let f = match sys::open_at(&d, &name, OpenAt::Read, 0) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(r),
            Err(e) if sys::is_symlink_error(&e) => {
                return Err(HwError::Unsafe {
                    path: path.to_path_buf(),
                    why: "the used-key record is a symbolic link".to_string(),
                });
            }
            Err(e) => return Err(io_err("reading the used-key record")(e)),
        };
        r.check_file(&f)?;
        let corrupt = |why: String| HwError::Corrupt {
            path: path.to_path_buf(),
            why: format!("used-key record: {why}"),
        };
        let text = read_bounded(f, MAX_RECORD_FILE)
            .map_err(io_err("reading the used-key record"))?
            .map_err(corrupt)?;
        if text.is_empty() {
            // Created by a sender that writes its first entry under the record's lock right
            // after (another SA under this key starting at the same moment), or left by one
            // that stopped in between, before it reserved a number: nothing has sent.
            return Ok(r);
        }
        let mut lines = text.lines().enumerate();
        match lines.next() {
            Some((_, RECORD_MAGIC)) => {}
            Some((_, l)) => {
                return Err(corrupt(format!(
                    "first line `{l}`, expected `{RECORD_MAGIC}`"
                )));
            }
            None => return Err(corrupt("empty".to_string())),
        }
        for (i, l) in lines {
            if l.is_empty() || l.starts_with('#') {
                continue;
            }
            let ok = l.strip_prefix("used ").and_then(|rest| {
                let (f, info) = rest.split_once(' ').unwrap_or((rest, ""));
                (f.len() == 64 && f.bytes().all(|b| b.is_ascii_hexdigit())).then_some((f, info))
            });
            match ok {
                Some((f, info)) => {
                    if f == fp {
                        r.entry = Some(info.to_string());
                    }
                    r.all.push((f.to_string(), info.to_string()));
                }
                None => return Err(corrupt(format!("line {}: `{l}`", i + 1))),
            }
        }
        if !text.is_empty() && !text.ends_with('\n') {
            return Err(corrupt("truncated (no final newline)".to_string()));
        }
        Ok(r)
    }

    /// Appends `used <fp> <info>` durably (file fsynced; the directory too when the record is
    /// new), under a short lock so concurrent senders under one key file do not interleave.
    /// Under that lock the record is read again: where it lists `fp` now (another sender of
    /// this SA, with another state directory, recorded it since this one read the record),
    /// nothing is written and that entry is returned, for the caller to refuse.
    pub(super) fn append(&mut self, fp: &str, info: &str) -> Result<Option<String>, HwError> {
        let (dir, name) = UsedRecord::dir_and_name(&self.path)?;
        let io_err = |what: &'static str| {
            let path = self.path.clone();
            move |err| HwError::Io { path, what, err }
        };
        let d = File::open(&dir).map_err(io_err("opening the key file's directory"))?;
        let mut f = sys::open_at(&d, &name, OpenAt::AppendCreate, 0o600).map_err(|e| {
            if sys::is_symlink_error(&e) {
                HwError::Unsafe {
                    path: self.path.clone(),
                    why: "the used-key record is a symbolic link".to_string(),
                }
            } else {
                io_err("recording that the key is used (the key file's directory must be writable)")(e)
            }
        })?;
        self.check_file(&f)?;
        let lock = DirLock::take(&f, &self.path, "locking the used-key record")?;
        if let Some(entry) = UsedRecord::read(&self.path, fp)?.entry {
            return Ok(Some(entry));
        }
        let created = f
            .metadata()
            .map_err(io_err("reading the used-key record"))?
            .len()
            == 0;
        let clean: String = info
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        let mut text = String::new();
        if created {
            text.push_str(RECORD_MAGIC);
            text.push_str(
                "\n# The SAs that have sent under the key in the file beside this one (by \
                 fingerprint; docs/nonce-safety.md).\n# Keep it with the key: a sender refuses \
                 to count from 1 for an SA listed here whose nonce state is missing.\n",
            );
        }
        text.push_str(&format!("used {fp} {clean}\n"));
        f.write_all(text.as_bytes())
            .and_then(|_| f.sync_all())
            .map_err(io_err("writing the used-key record"))?;
        drop(lock);
        if created {
            d.sync_all()
                .map_err(io_err("fsync of the key file's directory"))?;
        }
        self.entry = Some(clean);
        Ok(None)
    }
}

/// Every entry of the used-key record at `path` as (fingerprint, what follows it: `domain | SA
/// | state file`, and a note where the sender added one), read under the record's rules (a
/// bound, no link, this user's and writable by nobody else, a corrupt record refused). A missing
/// record has none.
pub fn used_record_entries(path: &Path) -> Result<Vec<(String, String)>, HwError> {
    Ok(UsedRecord::read(path, "")?.all)
}
