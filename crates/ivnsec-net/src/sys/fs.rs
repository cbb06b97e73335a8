//! Files: an exclusive `flock` ([`try_lock_exclusive`], [`unlock`]; one sender per nonce state
//! file), and file operations relative to an open directory that never follow a symbolic link
//! ([`open_at`], [`rename_at`], [`unlink_at`], [`stat_at`]; the nonce state directory).

use std::ffi::CString;
use std::io;
use std::mem;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// Takes an exclusive advisory lock (`flock(LOCK_EX | LOCK_NB)`) on `file` without waiting.
/// `Ok(true)`: this open file now holds the lock until it is closed (the kernel releases it
/// when the process ends, even on SIGKILL). `Ok(false)`: another open file holds it.
pub fn try_lock_exclusive(file: &std::fs::File) -> io::Result<bool> {
    // SAFETY: flock() takes a descriptor `file` keeps open for the duration of the call and
    // an integer operation; no pointers.
    let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if r == 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(false)
    } else {
        Err(e)
    }
}

/// Releases a `flock` taken with [`try_lock_exclusive`] on this open file (closing the file
/// releases it too).
pub fn unlock(file: &std::fs::File) -> io::Result<()> {
    // SAFETY: flock() takes a descriptor `file` keeps open for the duration of the call and
    // an integer operation; no pointers.
    let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_UN) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The effective user id of this process (who owns the files it creates).
pub fn effective_uid() -> u32 {
    // SAFETY: geteuid() takes no arguments and cannot fail.
    unsafe { libc::geteuid() }
}

/// How [`open_at`] opens a name inside a directory. Every mode adds `O_NOFOLLOW` and
/// `O_CLOEXEC`: a symbolic link at the name is an error (`ELOOP`, see [`is_symlink_error`]),
/// never followed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenAt {
    /// Read an existing file.
    Read,
    /// Read and write; create with the given mode when missing (never truncates).
    ReadWriteCreate,
    /// Write a new file: `AlreadyExists` when the name exists, even as a dangling link
    /// (`O_CREAT | O_EXCL`).
    CreateNew,
    /// Append; create with the given mode when missing.
    AppendCreate,
}

/// `name` as a C string when it is one plain entry of a directory (no `/`, not `.` or `..`).
fn entry_name(name: &str) -> io::Result<CString> {
    if name.is_empty() || name == "." || name == ".." || name.contains('/') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("`{name}` is not a plain file name"),
        ));
    }
    CString::new(name)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "file name has a NUL byte"))
}

/// Opens the entry `name` of the open directory `dir` (`openat(2)`), relative to the directory
/// itself: renaming or replacing the directory's path afterwards does not redirect it. `mode`
/// is used when the file is created.
pub fn open_at(
    dir: &std::fs::File,
    name: &str,
    how: OpenAt,
    mode: u32,
) -> io::Result<std::fs::File> {
    let c = entry_name(name)?;
    let flags = libc::O_NOFOLLOW
        | libc::O_CLOEXEC
        | match how {
            OpenAt::Read => libc::O_RDONLY,
            OpenAt::ReadWriteCreate => libc::O_RDWR | libc::O_CREAT,
            OpenAt::CreateNew => libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL,
            OpenAt::AppendCreate => libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT,
        };
    // SAFETY: `dir` keeps its descriptor open across the call, `c` is a NUL-terminated string
    // that outlives it, and the mode is passed as the variadic argument openat() reads only
    // with O_CREAT.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), c.as_ptr(), flags, mode as libc::c_uint) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: openat() just returned this descriptor and nothing else owns it.
    Ok(std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// Whether an error of [`open_at`] means the name is a symbolic link (`ELOOP` under
/// `O_NOFOLLOW`).
pub fn is_symlink_error(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ELOOP)
}

/// Renames the entry `from` of `dir` to `to` in the same directory (`renameat(2)`), replacing
/// `to` atomically (a link at `to` is replaced, never followed).
pub fn rename_at(dir: &std::fs::File, from: &str, to: &str) -> io::Result<()> {
    let (f, t) = (entry_name(from)?, entry_name(to)?);
    // SAFETY: `dir` keeps its descriptor open across the call; both names are NUL-terminated
    // strings that outlive it.
    let r = unsafe { libc::renameat(dir.as_raw_fd(), f.as_ptr(), dir.as_raw_fd(), t.as_ptr()) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Removes the entry `name` of `dir` (`unlinkat(2)`; a link is removed, not its target).
pub fn unlink_at(dir: &std::fs::File, name: &str) -> io::Result<()> {
    let c = entry_name(name)?;
    // SAFETY: `dir` keeps its descriptor open across the call; `c` is NUL-terminated and
    // outlives it; flags 0 removes a non-directory.
    let r = unsafe { libc::unlinkat(dir.as_raw_fd(), c.as_ptr(), 0) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// What [`stat_at`] says about a directory entry (the entry itself, not a link's target).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryStat {
    pub dev: u64,
    pub ino: u64,
    pub nlink: u64,
    /// `st_mode`: file type and permission bits.
    pub mode: u32,
    pub uid: u32,
}

impl EntryStat {
    pub fn is_symlink(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFLNK
    }
    pub fn is_file(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFREG
    }
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`: the entry `name` of `dir` as it is now.
pub fn stat_at(dir: &std::fs::File, name: &str) -> io::Result<EntryStat> {
    let c = entry_name(name)?;
    // SAFETY: stat is plain data; all-zero is a valid value.
    let mut st: libc::stat = unsafe { mem::zeroed() };
    // SAFETY: `dir` keeps its descriptor open across the call, `c` is NUL-terminated and
    // outlives it, and `st` is a valid, writable stat buffer.
    let r = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            c.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(EntryStat {
        dev: st.st_dev,
        ino: st.st_ino,
        nlink: st.st_nlink,
        mode: st.st_mode,
        uid: st.st_uid,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The directory-relative calls never follow a link and `CreateNew` never opens an
    /// existing name; a name with a `/` is refused.
    #[test]
    fn directory_relative_files_never_follow_links() {
        use std::io::{Read, Write};
        let mut r = [0u8; 6];
        getrandom::fill(&mut r).unwrap();
        let tag: String = r.iter().map(|b| format!("{b:02x}")).collect();
        let p = std::env::temp_dir().join(format!("ivnsec-sys-at-{tag}"));
        std::fs::create_dir(&p).unwrap();
        let victim = p.join("victim");
        std::fs::write(&victim, "keep").unwrap();
        std::os::unix::fs::symlink(&victim, p.join("link")).unwrap();
        let d = std::fs::File::open(&p).unwrap();
        for how in [OpenAt::Read, OpenAt::ReadWriteCreate, OpenAt::AppendCreate] {
            let e = open_at(&d, "link", how, 0o600).unwrap_err();
            assert!(is_symlink_error(&e), "{how:?}: {e}");
        }
        let e = open_at(&d, "link", OpenAt::CreateNew, 0o600).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert!(stat_at(&d, "link").unwrap().is_symlink());
        let mut f = open_at(&d, "new", OpenAt::CreateNew, 0o600).unwrap();
        f.write_all(b"x").unwrap();
        let st = stat_at(&d, "new").unwrap();
        assert!(st.is_file() && st.mode & 0o777 == 0o600 && st.nlink == 1);
        assert_eq!(st.uid, effective_uid());
        rename_at(&d, "new", "link").unwrap();
        assert!(
            stat_at(&d, "link").unwrap().is_file(),
            "the link was replaced"
        );
        let mut s = String::new();
        open_at(&d, "link", OpenAt::Read, 0)
            .unwrap()
            .read_to_string(&mut s)
            .unwrap();
        assert_eq!(s, "x");
        unlink_at(&d, "link").unwrap();
        assert_eq!(
            stat_at(&d, "link").unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        for bad in ["", ".", "..", "a/b", "../victim"] {
            assert!(open_at(&d, bad, OpenAt::Read, 0).is_err(), "{bad}");
        }
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        // A directory lock is exclusive per open file and released by unlock.
        let d2 = std::fs::File::open(&p).unwrap();
        assert!(try_lock_exclusive(&d).unwrap());
        assert!(!try_lock_exclusive(&d2).unwrap());
        unlock(&d).unwrap();
        assert!(try_lock_exclusive(&d2).unwrap());
        std::fs::remove_dir_all(&p).unwrap();
    }
}
