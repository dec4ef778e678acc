//! Files beneath the receiving directory, reached from descriptors, never by path: each
//! directory is opened from its parent's descriptor with `openat2(RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS)` (or, on kernels before 5.6, `openat(O_NOFOLLOW)`, the same for a
//! single component), so a symbolic link swapped in after a check cannot lead a write out of
//! `--dir`; files are created with `O_EXCL` (never through a link or onto another's file a
//! local user placed there) and renamed into place with `RENAME_NOREPLACE` unless `--force`.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::path::Path;

fn cstr(name: &str) -> io::Result<CString> {
    CString::new(name).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in a name"))
}

fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// Opens directory `root` (the receiving directory itself, trusted).
pub(crate) fn open_root(root: &Path) -> io::Result<OwnedFd> {
    let p = CString::new(root.as_os_str().as_encoded_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in a path"))?;
    // SAFETY: a valid C string; the descriptor returned is owned below.
    let fd = check(unsafe {
        libc::open(
            p.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    })?;
    // SAFETY: `fd` was just opened and is owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Opens directory `name` (one component) beneath `dir`, following no link.
pub(crate) fn open_dir(dir: BorrowedFd<'_>, name: &str) -> io::Result<OwnedFd> {
    let c = cstr(name)?;
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    // SAFETY: open_how is plain old data; zeroed is valid, the fields set below.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = flags as u64;
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS;
    // SAFETY: valid descriptor, C string and open_how of the size passed.
    let r = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir.as_raw_fd(),
            c.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    let fd = if r >= 0 {
        r as libc::c_int
    } else {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::ENOSYS) {
            return Err(e);
        }
        // SAFETY: valid descriptor and C string.
        check(unsafe { libc::openat(dir.as_raw_fd(), c.as_ptr(), flags) })?
    };
    // SAFETY: `fd` was just opened and is owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Creates directory `name` beneath `dir` (`AlreadyExists` if something is there).
pub(crate) fn mkdir(dir: BorrowedFd<'_>, name: &str) -> io::Result<()> {
    let c = cstr(name)?;
    // SAFETY: valid descriptor and C string.
    check(unsafe { libc::mkdirat(dir.as_raw_fd(), c.as_ptr(), 0o755) }).map(drop)
}

/// What `name` beneath `dir` is, links not followed (`NotFound` if nothing).
pub(crate) fn stat(dir: BorrowedFd<'_>, name: &str) -> io::Result<libc::stat> {
    let c = cstr(name)?;
    // SAFETY: stat is plain old data, filled by the call.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid descriptor, C string and stat buffer.
    check(unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            c.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    })?;
    Ok(st)
}

/// Whether `st` is a symbolic link, a directory.
pub(crate) fn kind(st: &libc::stat) -> (bool, bool) {
    let t = st.st_mode & libc::S_IFMT;
    (t == libc::S_IFLNK, t == libc::S_IFDIR)
}

/// Creates file `name` beneath `dir`, which must not exist (`O_EXCL`): whatever was there (a
/// stale file of ours, or a link or another's file placed by a local user) is removed first,
/// never followed nor written. `append` opens it for appending only (a journal).
pub(crate) fn create_new(dir: BorrowedFd<'_>, name: &str, append: bool) -> io::Result<File> {
    match unlink(dir, name) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let mode = if append {
        libc::O_WRONLY | libc::O_APPEND
    } else {
        libc::O_RDWR
    };
    open_file(dir, name, mode | libc::O_CREAT | libc::O_EXCL)
}

/// Opens the existing regular file `name` beneath `dir` (a part file or journal resumed): not
/// through a link, and not a file with other names (a hard link to someone else's file).
pub(crate) fn open_existing(dir: BorrowedFd<'_>, name: &str, append: bool) -> io::Result<File> {
    let mode = if append {
        libc::O_WRONLY | libc::O_APPEND
    } else {
        libc::O_RDWR
    };
    let f = open_file(dir, name, mode)?;
    let m = f.metadata()?;
    if !m.is_file() || std::os::unix::fs::MetadataExt::nlink(&m) != 1 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file of a single name",
        ));
    }
    Ok(f)
}

/// Opens `name` beneath `dir` for reading, not through a link.
pub(crate) fn open_read(dir: BorrowedFd<'_>, name: &str) -> io::Result<File> {
    open_file(dir, name, libc::O_RDONLY)
}

fn open_file(dir: BorrowedFd<'_>, name: &str, flags: libc::c_int) -> io::Result<File> {
    let c = cstr(name)?;
    // SAFETY: valid descriptor and C string.
    let fd = check(unsafe {
        libc::openat(
            dir.as_raw_fd(),
            c.as_ptr(),
            flags | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            0o644 as libc::c_uint,
        )
    })?;
    // SAFETY: `fd` was just opened and is owned by no one else.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// Removes `name` beneath `dir` (a link itself, not what it points to).
pub(crate) fn unlink(dir: BorrowedFd<'_>, name: &str) -> io::Result<()> {
    let c = cstr(name)?;
    // SAFETY: valid descriptor and C string.
    check(unsafe { libc::unlinkat(dir.as_raw_fd(), c.as_ptr(), 0) }).map(drop)
}

/// Renames `from` to `to`, both beneath `dir`; unless `replace`, fails with `AlreadyExists`
/// if `to` exists (`RENAME_NOREPLACE`; on a file system without it, a check just before).
pub(crate) fn rename(dir: BorrowedFd<'_>, from: &str, to: &str, replace: bool) -> io::Result<()> {
    let (f, t) = (cstr(from)?, cstr(to)?);
    let d = dir.as_raw_fd();
    if !replace {
        // SAFETY: valid descriptors and C strings.
        let r = unsafe { libc::renameat2(d, f.as_ptr(), d, t.as_ptr(), libc::RENAME_NOREPLACE) };
        if r == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if !matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS)) {
            return Err(e);
        }
        if stat(dir, to).is_ok() {
            return Err(io::Error::from(io::ErrorKind::AlreadyExists));
        }
    }
    // SAFETY: valid descriptors and C strings.
    check(unsafe { libc::renameat(d, f.as_ptr(), d, t.as_ptr()) }).map(drop)
}

/// Flushes `dir`'s entries to disk (after a rename).
pub(crate) fn sync_dir(dir: BorrowedFd<'_>) {
    // SAFETY: a valid descriptor.
    let _ = unsafe { libc::fsync(dir.as_raw_fd()) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn links_are_neither_followed_nor_written_through() {
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let victim = outside.path().join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        std::os::unix::fs::symlink(outside.path(), d.path().join("dir")).unwrap();
        std::os::unix::fs::symlink(&victim, d.path().join(".f.part")).unwrap();
        std::fs::hard_link(&victim, d.path().join("hard")).unwrap();
        let root = open_root(d.path()).unwrap();
        // A directory that is a link: refused.
        assert!(open_dir(root.as_fd(), "dir").is_err());
        // A link planted at a part file's name: removed, not written through.
        create_new(root.as_fd(), ".f.part", false).unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        assert!(
            !std::fs::symlink_metadata(d.path().join(".f.part"))
                .unwrap()
                .is_symlink()
        );
        // A hard link to another's file is not resumed into.
        assert!(open_existing(root.as_fd(), "hard", false).is_err());
        // The final rename replaces nothing unless asked to.
        std::fs::write(d.path().join("final"), b"old").unwrap();
        let e = rename(root.as_fd(), ".f.part", "final", false).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(d.path().join("final")).unwrap(), b"old");
        rename(root.as_fd(), ".f.part", "final", true).unwrap();
        assert_eq!(std::fs::read(d.path().join("final")).unwrap(), b"");
    }
}
