//! The file handling of the nonce state: the state directory (created and checked), its locks,
//! bounded reads of state files, and atomic writes.

use std::fs::{self, DirBuilder, File};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::Path;
use std::time::{Duration, Instant};

use ivnsec_net::sys::{self, OpenAt};

use super::{DIR_LOCK_WAIT, HwError, Kind, MAX_STATE_FILE, parse};

/// `(st_dev, st_ino)` of an open file.
pub(super) fn file_id(f: &File) -> io::Result<(u64, u64)> {
    let m = f.metadata()?;
    Ok((m.dev(), m.ino()))
}

/// How long a state lock that looks held is tried again before it is called held.
const STATE_LOCK_GRACE: Duration = Duration::from_millis(250);

/// Takes the exclusive lock of a state's lock file, trying again for [`STATE_LOCK_GRACE`]: a
/// process that forks (a spawn on any of its threads) holds a copy of every descriptor until
/// the child execs and close-on-exec drops it, so a lock its holder has just released can still
/// look held for that moment. A sender that really holds it is still refused after the grace.
pub(super) fn lock_briefly(f: &File) -> io::Result<bool> {
    let t0 = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        if sys::try_lock_exclusive(f)? {
            return Ok(true);
        }
        if t0.elapsed() >= STATE_LOCK_GRACE {
            return Ok(false);
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

/// A short exclusive `flock` on the state directory or the used-key record (on a duplicate of
/// its descriptor, which shares the lock); released when dropped.
pub(crate) struct DirLock(File);

impl DirLock {
    pub(crate) fn take(dir: &File, path: &Path, what: &'static str) -> Result<DirLock, HwError> {
        let io_err = |err| HwError::Io {
            path: path.to_path_buf(),
            what,
            err,
        };
        let f = dir.try_clone().map_err(io_err)?;
        let t0 = Instant::now();
        let mut pause = Duration::from_micros(200);
        loop {
            match sys::try_lock_exclusive(&f) {
                Ok(true) => return Ok(DirLock(f)),
                Ok(false) if t0.elapsed() < DIR_LOCK_WAIT => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(20));
                }
                Ok(false) => {
                    return Err(io_err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!(
                            "another process held the directory lock for more than {} s",
                            DIR_LOCK_WAIT.as_secs()
                        ),
                    )));
                }
                Err(e) => return Err(io_err(e)),
            }
        }
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        let _ = sys::unlock(&self.0);
    }
}

/// Creates the missing components of `dir` (mode 0700), each followed by an fsync of its
/// parent so the new entry survives a power cut; then opens `dir` and checks that it is a
/// directory of this user that nobody else may write.
pub(super) fn prepare_dir(dir: &Path) -> Result<File, HwError> {
    let io_err = |path: &Path, what: &'static str| {
        let path = path.to_path_buf();
        move |err| HwError::Io { path, what, err }
    };
    let mut missing = Vec::new();
    let mut cur = Some(dir);
    while let Some(c) = cur {
        if c.as_os_str().is_empty() || fs::symlink_metadata(c).is_ok() {
            break;
        }
        missing.push(c);
        cur = c.parent();
    }
    for c in missing.iter().rev() {
        match DirBuilder::new().mode(0o700).create(c) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io_err(c, "creating the state directory")(e)),
        }
        let parent = match c.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        File::open(parent)
            .and_then(|d| d.sync_all())
            .map_err(io_err(
                parent,
                "fsync of the parent of the new state directory",
            ))?;
    }
    let f = File::open(dir).map_err(io_err(dir, "opening the state directory"))?;
    let m = f
        .metadata()
        .map_err(io_err(dir, "reading the state directory's owner and mode"))?;
    let unsafe_dir = |why: String| HwError::Unsafe {
        path: dir.to_path_buf(),
        why,
    };
    if !m.is_dir() {
        return Err(unsafe_dir("not a directory".to_string()));
    }
    let me = sys::effective_uid();
    if m.uid() != me {
        return Err(unsafe_dir(format!(
            "the directory belongs to uid {}, not to this user (uid {me}); use a state \
             directory of your own",
            m.uid()
        )));
    }
    if m.mode() & 0o022 != 0 {
        return Err(unsafe_dir(format!(
            "the directory is writable by group or others (mode {:o}); `chmod go-w {}`",
            m.mode() & 0o7777,
            dir.display()
        )));
    }
    Ok(f)
}

/// Reads at most `max` bytes of an open file as UTF-8; `Err(why)` when larger or not text.
pub(crate) fn read_bounded(f: File, max: u64) -> Result<Result<String, String>, io::Error> {
    let mut buf = Vec::new();
    f.take(max + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > max {
        return Ok(Err(format!("larger than {max} bytes")));
    }
    Ok(String::from_utf8(buf).map_err(|_| "not UTF-8 text".to_string()))
}

/// The mark of the state file `name` in `dir`: `None` when there is none. Never follows a link.
pub(super) fn read_state(
    dir: &File,
    name: &str,
    path: &Path,
    header: &str,
    kind: Kind,
) -> Result<Option<u64>, HwError> {
    let f = match sys::open_at(dir, name, OpenAt::Read, 0) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) if sys::is_symlink_error(&e) => {
            return Err(HwError::Unsafe {
                path: path.to_path_buf(),
                why: "the state file is a symbolic link".to_string(),
            });
        }
        Err(err) => {
            return Err(HwError::Io {
                path: path.to_path_buf(),
                what: "reading",
                err,
            });
        }
    };
    let io_err = |err| HwError::Io {
        path: path.to_path_buf(),
        what: "reading",
        err,
    };
    if !f.metadata().map_err(io_err)?.is_file() {
        return Err(HwError::Unsafe {
            path: path.to_path_buf(),
            why: "the state file is not a regular file".to_string(),
        });
    }
    let corrupt = |why| HwError::Corrupt {
        path: path.to_path_buf(),
        why,
    };
    let text = read_bounded(f, MAX_STATE_FILE)
        .map_err(io_err)?
        .map_err(corrupt)?;
    parse(&text, header, kind).map(Some).map_err(corrupt)
}

/// Writes `content` as the entry `name` of `dir` durably and atomically: the temporary entry
/// `tmp` (a stale one — a file or a link — is removed first, then created with `O_EXCL`),
/// written, fsynced, renamed over `name`. The caller fsyncs the directory.
pub(super) fn write_atomic(
    dir: &File,
    tmp: &str,
    name: &str,
    content: &str,
    dir_path: &Path,
) -> Result<(), HwError> {
    let tmp_path = dir_path.join(tmp);
    let err = |what: &'static str| {
        let path = tmp_path.clone();
        move |err| HwError::Io { path, what, err }
    };
    match sys::unlink_at(dir, tmp) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(err("removing a stale temporary file")(e)),
    }
    let mut f = sys::open_at(dir, tmp, OpenAt::CreateNew, 0o600)
        .map_err(err("creating the temporary file"))?;
    f.write_all(content.as_bytes())
        .map_err(err("writing the temporary file"))?;
    f.sync_all().map_err(err("fsync of the temporary file"))?;
    drop(f);
    sys::rename_at(dir, tmp, name).map_err(|err| HwError::Io {
        path: dir_path.join(name),
        what: "renaming the temporary file over the state file",
        err,
    })
}
