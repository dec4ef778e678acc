//! Files are written atomically: to a temporary file beside the target, synced, then renamed over
//! it, so that a reader never sees half a file and a crash never leaves one. A target that exists
//! and is no regular file (`-o /dev/null`, a FIFO, a terminal) is written straight into: renaming
//! over it would replace the device (as root, `/dev/null` itself) with a file.

use std::fs;
use std::io::{self, Write};
use std::path::Path;

/// Writes `bytes` to `path` atomically (same directory, `fsync`, `rename`).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_with(path, |f| f.write_all(bytes))
}

/// Writes to `path` atomically what `fill` writes into the (buffered) file it is given: for
/// results too large to build in memory first.
pub fn write_atomic_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    if fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        let mut w = io::BufWriter::new(fs::OpenOptions::new().write(true).open(path)?);
        fill(&mut w)?;
        return w.flush();
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"))?;
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| {
        let mut w = io::BufWriter::with_capacity(1 << 20, create_new(&tmp)?);
        fill(&mut w)?;
        let f = w.into_inner().map_err(io::IntoInnerError::into_error)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Creates `tmp`, which must not exist (`O_EXCL`, and so never through a link someone placed
/// there, in a directory others can write to); one left by a crashed writer of the same process
/// id (a file or a link: removing it follows nothing) is removed first.
fn create_new(tmp: &Path) -> io::Result<fs::File> {
    let open = || {
        fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(tmp)
    };
    match open() {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            fs::remove_file(tmp)?;
            open()
        }
        r => r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_whole_file_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.json");
        write_atomic(&p, b"first").unwrap();
        write_atomic(&p, b"second").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"second");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    /// `-o /dev/null` (here through a link to it, so that nothing outside the test's directory
    /// could be replaced): the bytes go to the device, which stays what it is.
    #[test]
    fn writes_into_a_device_instead_of_replacing_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out");
        std::os::unix::fs::symlink("/dev/null", &p).unwrap();
        write_atomic(&p, b"discarded").unwrap();
        assert!(fs::symlink_metadata(&p).unwrap().file_type().is_symlink());
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn never_writes_through_a_link_planted_at_the_temporary_name() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        fs::write(&victim, b"precious").unwrap();
        let p = dir.path().join("r.csv");
        let tmp = dir
            .path()
            .join(format!(".r.csv.tmp-{}", std::process::id()));
        std::os::unix::fs::symlink(&victim, &tmp).unwrap();
        write_atomic(&p, b"rows").unwrap();
        assert_eq!(fs::read(&victim).unwrap(), b"precious");
        assert_eq!(fs::read(&p).unwrap(), b"rows");
        assert!(!tmp.exists() && fs::symlink_metadata(&tmp).is_err());
    }

    #[test]
    fn fails_cleanly_in_missing_directory() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("nope/r.json");
        assert!(write_atomic(&p, b"x").is_err());
    }
}
