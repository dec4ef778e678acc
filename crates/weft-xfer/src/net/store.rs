//! The receiver's files: names are checked to stay inside the receiving directory, data goes to a
//! hidden part file beside the final name with a journal of finished buffers, and only a complete
//! (and, in reliable mode, verified) file is renamed into place.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{self, BufRead, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use weft_model::Size;

use super::beneath;
use crate::proto::{BlockHasher, buffer_len, buffers_in};
use crate::wire::RefuseCode;
use crate::wire::control::Stripe;

/// First line of a journal: format, size, buffer size, whole-file hash.
const JOURNAL_MAGIC: &str = "weft-xfer-journal v1";

/// Checks a relative name from the wire and splits it into components. Refuses empty names,
/// absolute paths, `.` and `..`, empty components, NUL and backslashes.
pub fn validate_name(name: &str) -> Result<Vec<&str>, String> {
    if name.is_empty() {
        return Err("empty file name".into());
    }
    if name.starts_with('/') {
        return Err(format!(
            "absolute path {name:?} refused: names must be relative"
        ));
    }
    if name.contains('\0') || name.contains('\\') {
        return Err(format!("name {name:?} contains NUL or a backslash"));
    }
    let parts: Vec<&str> = name.split('/').collect();
    for p in &parts {
        match *p {
            "" => return Err(format!("name {name:?} has an empty component")),
            "." | ".." => {
                return Err(format!(
                    "name {name:?} refused: '.' and '..' are not allowed"
                ));
            }
            _ if p.len() > 255 => return Err(format!("component of {name:?} is too long")),
            _ => {}
        }
    }
    Ok(parts)
}

/// One file being received, shared by the sessions of an MBTP transfer.
#[derive(Debug)]
pub struct Entry {
    /// The part file.
    pub file: Arc<File>,
    /// Taken around each write of the part file: the kernel takes the file's inode lock for a
    /// write anyway, and two pipeline threads writing at once made one of them spin on it in
    /// the kernel (4% of the receiver's CPU on tmpfs in a profile) instead of sleeping here.
    pub write_turn: Arc<Mutex<()>>,
    /// Final path.
    pub final_path: PathBuf,
    /// Part file path.
    pub part_path: PathBuf,
    /// Journal path (reliable mode).
    pub journal_path: Option<PathBuf>,
    /// Open journal, appended to after each buffer is written.
    pub journal: Option<File>,
    /// File size, bytes.
    pub size: u64,
    /// Buffer size, bytes (the block size of the whole-file digest).
    pub buffer_size: u32,
    /// Bytes written so far (buffers, not counting resumed ones).
    pub written: u64,
    /// Renamed into place.
    pub complete: bool,
    /// Sessions that joined (MBTP).
    pub sessions: u32,
    /// A stripe of a file (MBTP over separate receivers): `size` is only its fair share, and
    /// it is complete when its sender says so, not when that much is written.
    pub striped: bool,
    /// The control connection of the session that holds the file (a copy of its descriptor),
    /// if one session alone does: once that connection is closed (its sender exited or was
    /// killed) a resume waits for the session to let go instead of being refused.
    pub holder: Option<OwnedFd>,
    /// The directory the file is in, reached from the receiving directory's descriptor: the
    /// part file, journal and final name are used beneath it, never by path.
    pub dir: Arc<OwnedFd>,
    /// The final rename may replace a file there (`--force`).
    pub force: bool,
}

/// The last component of one of an entry's paths (names are checked UTF-8 on the way in).
fn leaf(p: &Path) -> &str {
    p.file_name().and_then(|n| n.to_str()).unwrap_or_default()
}

impl Entry {
    /// Every byte has been written (unreliable modes: the file is whole; never for a stripe).
    pub fn all_written(&self) -> bool {
        !self.striped && self.written >= self.size
    }
}

/// A file opened for receiving.
#[derive(Debug, Clone)]
pub struct Opened {
    /// The shared entry.
    pub entry: Arc<Mutex<Entry>>,
    /// Buffer indices already on disk (resume), as half-open ranges.
    pub have: Vec<(u32, u32)>,
}

/// What a sender's offer asks the store to open.
#[derive(Debug, Clone, Copy)]
pub struct OpenRequest<'a> {
    /// Relative name (untrusted).
    pub name: &'a str,
    /// File size, bytes.
    pub size: u64,
    /// Buffer size, bytes.
    pub buffer_size: u32,
    /// Identity of the sender's file version (a journal resumes only if it matches).
    pub fingerprint: &'a [u8; 32],
    /// Continue from a matching journal.
    pub resume: bool,
    /// Keep a journal (reliable mode).
    pub reliable: bool,
    /// Let several MBTP sessions write the same file.
    pub shared: bool,
    /// Keep this session's stripe of the file instead of the file (MBTP over separate
    /// receivers; see [`super::stripe`]): written compactly under `NAME.mbtp-K-of-R`.
    pub stripe: Option<Stripe>,
}

/// The receiving directory.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
    force: bool,
    open: Arc<Mutex<Registry>>,
}

/// The files being received, by final path.
type Registry = HashMap<PathBuf, Arc<Mutex<Entry>>>;

type Refusal = (RefuseCode, String);

impl Store {
    /// A store writing only below `root` (created if missing); `force` allows replacing files.
    pub fn new(root: &Path, force: bool) -> io::Result<Self> {
        fs::create_dir_all(root)?;
        Ok(Store {
            root: root.canonicalize()?,
            force,
            open: Arc::new(Mutex::new(HashMap::new())),
        })
    }

    /// The canonical receiving directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Removes the part files and journals of transfers last written more than `age` ago (a
    /// sender that never came back to `--resume`), so that strangers' abandoned transfers do
    /// not fill the directory for ever. Walks the directory without following links (at most
    /// 32 levels deep); returns what it removed.
    pub fn remove_stale_parts(&self, age: std::time::Duration) -> Vec<PathBuf> {
        let mut removed = Vec::new();
        let now = std::time::SystemTime::now();
        let mut dirs = vec![(self.root.clone(), 0u32)];
        while let Some((dir, depth)) = dirs.pop() {
            let Ok(entries) = fs::read_dir(&dir) else {
                continue;
            };
            for e in entries.flatten() {
                let Ok(ft) = e.file_type() else { continue };
                let path = e.path();
                if ft.is_dir() && depth < 32 {
                    dirs.push((path, depth + 1));
                    continue;
                }
                let name = e.file_name();
                let name = name.to_string_lossy();
                let ours = name.starts_with('.')
                    && (name.ends_with(".weft-part") || name.ends_with(".weft-journal"));
                let old = e
                    .metadata()
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| now.duration_since(t).ok())
                    .is_some_and(|d| d > age);
                if ft.is_file() && ours && old && fs::remove_file(&path).is_ok() {
                    removed.push(path);
                }
            }
        }
        removed
    }

    /// Opens a file as `req` asks.
    pub fn open(&self, req: &OpenRequest<'_>) -> Result<Opened, Refusal> {
        self.open_held(req, None)
    }

    /// Opens a file as `req` asks for the session whose control connection is `holder`. A file
    /// still held by a session whose sender has gone (its control connection closed: the
    /// process exited or was killed, and a `--resume` came at once) is waited for, up to
    /// [`RELEASE_WAIT`], while that session finishes the writes it has queued and lets go.
    pub fn open_held(
        &self,
        req: &OpenRequest<'_>,
        holder: Option<BorrowedFd<'_>>,
    ) -> Result<Opened, Refusal> {
        let &OpenRequest {
            name,
            size,
            buffer_size,
            fingerprint: hash,
            resume,
            reliable,
            shared,
            stripe,
        } = req;
        let striped = stripe.map(|s| super::stripe::stripe_name(name, &s));
        let name = striped.as_deref().unwrap_or(name);
        let parts = validate_name(name).map_err(|m| (RefuseCode::Path, m))?;
        let (last, dirs) = parts
            .split_last()
            .ok_or((RefuseCode::Path, "empty name".to_string()))?;
        let mut dir = self.root.clone();
        let mut dirfd = beneath::open_root(&self.root)
            .map_err(|e| other(format!("opening {}: {e}", self.root.display())))?;
        for d in dirs {
            dir.push(d);
            // Create first, then open what is there: concurrent sessions of one MBTP transfer
            // create the same directories, and a check-then-create would race. Opened from its
            // parent's descriptor, following no link: a link swapped in cannot lead out.
            match beneath::mkdir(dirfd.as_fd(), d) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(other(format!("creating {}: {e}", dir.display()))),
            }
            dirfd = match beneath::open_dir(dirfd.as_fd(), d) {
                Ok(fd) => fd,
                Err(e) => {
                    let what = beneath::stat(dirfd.as_fd(), d).map(|st| beneath::kind(&st));
                    return Err(match what {
                        Ok((true, _)) => (
                            RefuseCode::Path,
                            format!(
                                "{name:?} leads through a symbolic link ({}); refused",
                                dir.display()
                            ),
                        ),
                        Ok((_, false)) => (
                            RefuseCode::Path,
                            format!("{} is not a directory", dir.display()),
                        ),
                        _ => other(format!("opening {}: {e}", dir.display())),
                    });
                }
            };
        }
        let final_path = dir.join(last);
        let part_path = dir.join(format!(".{last}.weft-part"));
        let journal_path = dir.join(format!(".{last}.weft-journal"));
        let mut open = self.registry_once_released(&final_path)?;
        if let Some(e) = open.get(&final_path) {
            let mut g = e.lock().map_err(|_| other("entry lock poisoned".into()))?;
            if shared && g.size == size {
                g.sessions += 1;
                // Joining an MBTP transfer that already put the file in place: nothing to send.
                let have = if g.complete {
                    to_ranges(&(0..buffers_in(size, buffer_size) as u32).collect::<Vec<_>>())
                } else {
                    Vec::new()
                };
                return Ok(Opened {
                    entry: e.clone(),
                    have,
                });
            }
            return Err((
                RefuseCode::Exists,
                format!("{name:?} is being received by another transfer"),
            ));
        }
        let part_name = format!(".{last}.weft-part");
        let journal_name = format!(".{last}.weft-journal");
        match beneath::stat(dirfd.as_fd(), last).map(|st| beneath::kind(&st)) {
            Ok((true, _)) => {
                return Err((
                    RefuseCode::Path,
                    format!("{name:?} is a symbolic link at the receiver; refused"),
                ));
            }
            Ok((_, true)) => {
                return Err((
                    RefuseCode::Exists,
                    format!("{name:?} is a directory at the receiver"),
                ));
            }
            Ok(_) if !self.force => {
                return Err((
                    RefuseCode::Exists,
                    format!(
                        "{name:?} already exists at the receiver (use --force there to replace it)"
                    ),
                ));
            }
            _ => {}
        }
        let nbuf = buffers_in(size, buffer_size);
        let header = format!(
            "{JOURNAL_MAGIC} {size} {buffer_size} {}\n",
            blake3::Hash::from(*hash).to_hex()
        );
        let have = if reliable && resume {
            read_journal(
                dirfd.as_fd(),
                (&journal_name, &part_name),
                &header,
                size,
                nbuf,
            )
        } else {
            None
        };
        let fresh = have.is_none();
        let present = have.as_ref().map_or(0, |h| {
            h.iter()
                .map(|&i| crate::proto::buffer_len(size, buffer_size, i) as u64)
                .sum()
        });
        let promised = open
            .values()
            .filter_map(|e| e.lock().ok().map(|g| g.size.saturating_sub(g.written)))
            .sum();
        // A stripe takes what its receiver is given, not known ahead: room for its fair share
        // (the file's buffers over the receivers, rounded up) is asked for; a receiver given
        // more than that by a slower peer's absence may still fill its disk, which the session
        // then reports.
        let need = match stripe {
            Some(s) => fair_share(size, buffer_size, s.parts),
            None => size.saturating_sub(present),
        };
        check_space(&dir, name, need, promised)?;
        // A fresh part file is a new file (O_EXCL: never a link or another's file placed at its
        // name); a resumed one must be a regular file of that single name.
        let file = if fresh {
            beneath::create_new(dirfd.as_fd(), &part_name, false)
        } else {
            beneath::open_existing(dirfd.as_fd(), &part_name, false)
        }
        .map_err(|e| other(format!("opening {}: {e}", part_path.display())))?;
        if fresh {
            // A stripe grows as buffers are appended; a file has its size from the start.
            let len = if stripe.is_some() { 0 } else { size };
            file.set_len(len)
                .map_err(|e| other(format!("sizing {}: {e}", part_path.display())))?;
        }
        let journal = if reliable {
            let mut j = if fresh {
                beneath::create_new(dirfd.as_fd(), &journal_name, true)
            } else {
                beneath::open_existing(dirfd.as_fd(), &journal_name, true)
            }
            .map_err(|e| other(format!("opening {}: {e}", journal_path.display())))?;
            if fresh {
                j.write_all(header.as_bytes())
                    .map_err(|e| other(format!("writing the journal: {e}")))?;
            }
            Some(j)
        } else {
            let _ = beneath::unlink(dirfd.as_fd(), &journal_name);
            None
        };
        let have = have.unwrap_or_default();
        let entry = Arc::new(Mutex::new(Entry {
            file: Arc::new(file),
            write_turn: Arc::new(Mutex::new(())),
            final_path: final_path.clone(),
            part_path,
            journal_path: reliable.then_some(journal_path),
            journal,
            size: if stripe.is_some() { need } else { size },
            buffer_size,
            written: 0,
            complete: false,
            sessions: 1,
            striped: stripe.is_some(),
            holder: holder
                .filter(|_| !shared)
                .and_then(|fd| fd.try_clone_to_owned().ok()),
            dir: Arc::new(dirfd),
            force: self.force,
        }));
        open.insert(final_path, entry.clone());
        Ok(Opened {
            entry,
            have: to_ranges(&have),
        })
    }

    /// The registry, locked, once the file at `path` is not held by a session whose control
    /// connection is closed, or after [`RELEASE_WAIT`].
    fn registry_once_released(
        &self,
        path: &Path,
    ) -> Result<std::sync::MutexGuard<'_, Registry>, Refusal> {
        let start = std::time::Instant::now();
        loop {
            let open = self
                .open
                .lock()
                .map_err(|_| other("store lock poisoned".into()))?;
            let orphaned = open.get(path).is_some_and(|e| {
                e.lock()
                    .is_ok_and(|g| g.holder.as_ref().is_some_and(|fd| closed(fd.as_fd())))
            });
            if !orphaned || start.elapsed() > RELEASE_WAIT {
                return Ok(open);
            }
            drop(open);
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    /// Forgets an entry (after it is in place or abandoned); the part file and journal stay on
    /// disk for `--resume` unless `discard`.
    pub fn close(&self, entry: &Arc<Mutex<Entry>>, discard: bool) {
        // Lock order everywhere: the registry, then the entry.
        let Ok(mut open) = self.open.lock() else {
            return;
        };
        let Ok(mut g) = entry.lock() else { return };
        g.sessions = g.sessions.saturating_sub(1);
        if discard && !g.complete {
            remove_part(&g);
        }
        if (g.sessions == 0 || discard)
            && open
                .get(&g.final_path)
                .is_some_and(|e| Arc::ptr_eq(e, entry))
        {
            open.remove(&g.final_path);
        }
        if g.sessions == 0 {
            g.journal = None;
        }
    }
}

/// How long a resume waits for a session whose sender has gone to let go of the file.
pub const RELEASE_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// Whether the peer of connected socket `fd` has closed its end (or reset it).
fn closed(fd: BorrowedFd<'_>) -> bool {
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLRDHUP,
        revents: 0,
    };
    // SAFETY: one valid pollfd, no wait.
    let n = unsafe { libc::poll(&mut p, 1, 0) };
    n == 1 && p.revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) != 0
}

/// Bytes of a file of `size` in buffers of `buffer_size` that `parts` receivers each take if
/// they share its buffers evenly (rounded up to whole buffers).
fn fair_share(size: u64, buffer_size: u32, parts: u16) -> u64 {
    let n = buffers_in(size, buffer_size);
    let per = n.div_ceil(parts.max(1) as u64);
    (0..per.min(n))
        .map(|i| buffer_len(size, buffer_size, i as u32) as u64)
        .sum()
}

/// Refuses a file that cannot fit: `need` bytes are still to be written under `dir`, which has
/// `promised` bytes of its free space already spoken for by files being received. (Part files
/// are sparse: they take space only as data arrives, so the check is of what will be written.)
fn check_space(dir: &Path, name: &str, need: u64, promised: u64) -> Result<(), Refusal> {
    let free = match free_bytes(dir) {
        Ok(f) => f,
        // A file system that cannot say lets the write itself tell.
        Err(_) => return Ok(()),
    };
    let left = free.saturating_sub(promised);
    if need <= left {
        return Ok(());
    }
    let promised = if promised > 0 {
        format!(
            " ({} of its {} free are promised to files being received)",
            Size(promised),
            Size(free)
        )
    } else {
        String::new()
    };
    Err((
        RefuseCode::NoSpace,
        format!(
            "no space for {name:?}: it needs {} ({need} bytes) but the receiving file system has {} ({left} bytes) free{promised}",
            Size(need),
            Size(left)
        ),
    ))
}

/// Bytes an unprivileged writer may still write on the file system of `dir` (statvfs).
pub fn free_bytes(dir: &Path) -> io::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| io::Error::other("path contains NUL"))?;
    // SAFETY: statvfs is plain old data; zeroed is a valid value to be overwritten.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path; `st` is a valid out-pointer.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}

fn other(msg: String) -> Refusal {
    (RefuseCode::Other, msg)
}

/// Removes an entry's part file and journal.
fn remove_part(g: &Entry) {
    let _ = beneath::unlink(g.dir.as_fd(), leaf(&g.part_path));
    if let Some(j) = &g.journal_path {
        let _ = beneath::unlink(g.dir.as_fd(), leaf(j));
    }
}

fn read_journal(
    dir: BorrowedFd<'_>,
    (journal, part): (&str, &str),
    header: &str,
    size: u64,
    nbuf: u64,
) -> Option<Vec<u32>> {
    let st = beneath::stat(dir, part).ok()?;
    if st.st_mode & libc::S_IFMT != libc::S_IFREG || st.st_size as u64 != size {
        return None;
    }
    let f = beneath::open_read(dir, journal).ok()?;
    let mut lines = io::BufReader::new(f).lines();
    if lines.next()?.ok()? + "\n" != header {
        return None;
    }
    let mut have: Vec<u32> = lines
        .map_while(Result::ok)
        .filter_map(|l| l.trim().parse::<u32>().ok())
        .filter(|i| (*i as u64) < nbuf)
        .collect();
    have.sort_unstable();
    have.dedup();
    Some(have)
}

fn to_ranges(v: &[u32]) -> Vec<(u32, u32)> {
    let mut out: Vec<(u32, u32)> = Vec::new();
    for &i in v {
        match out.last_mut() {
            Some((_, e)) if *e == i => *e += 1,
            _ => out.push((i, i + 1)),
        }
    }
    out
}

/// Writes one buffer at `offset`, then records `index` in the journal (if any).
pub fn write_buffer(
    entry: &Arc<Mutex<Entry>>,
    offset: u64,
    index: u32,
    data: &[u8],
) -> io::Result<()> {
    let (file, turn) = {
        let g = entry
            .lock()
            .map_err(|_| io::Error::other("entry lock poisoned"))?;
        (g.file.clone(), g.write_turn.clone())
    };
    {
        let _turn = turn
            .lock()
            .map_err(|_| io::Error::other("write lock poisoned"))?;
        file.write_all_at(data, offset)?;
    }
    let mut g = entry
        .lock()
        .map_err(|_| io::Error::other("entry lock poisoned"))?;
    if let Some(j) = g.journal.as_mut() {
        j.write_all(format!("{index}\n").as_bytes())?;
    }
    g.written += data.len() as u64;
    Ok(())
}

/// The whole-file digest ([`crate::proto::file_digest`]) of `size` bytes of a file read back
/// from disk in blocks of `block` bytes.
pub fn digest_file(file: &File, size: u64, block: u32) -> io::Result<[u8; 32]> {
    digest_file_known(file, size, block, &HashMap::new(), &BlockHasher::default())
}

/// Like [`digest_file`] with the blocks' checksums made by `hasher`, taking that of block `i`
/// from `known` where present (blocks verified in memory before they were written) and reading
/// back only the others.
pub fn digest_file_known(
    file: &File,
    size: u64,
    block: u32,
    known: &HashMap<u32, [u8; 32]>,
    hasher: &BlockHasher,
) -> io::Result<[u8; 32]> {
    let block = block.max(1);
    let mut hashes = Vec::new();
    let mut buf = Vec::new();
    let mut off = 0u64;
    let mut i = 0u32;
    while off < size {
        let n = (size - off).min(block as u64) as usize;
        match known.get(&i) {
            Some(h) => hashes.push(*h),
            None => {
                buf.resize(n, 0);
                file.read_exact_at(&mut buf[..n], off)?;
                hashes.push(hasher.hash(&buf[..n]));
            }
        }
        off += n as u64;
        i = i.wrapping_add(1);
    }
    Ok(crate::proto::file_digest(&hashes))
}

/// The whole-file digest of a file by path (used by tests and by the sender to check resumed
/// blocks).
pub fn digest_path(path: &Path, block: u32) -> io::Result<[u8; 32]> {
    let f = File::open(path)?;
    let size = f.metadata()?.len();
    digest_file(&f, size, block)
}

/// Verifies (if `hash` is given), syncs and renames the part file into place; removes the
/// journal. On a hash mismatch the part file and journal are removed and nothing is renamed.
pub fn finish(entry: &Arc<Mutex<Entry>>, hash: Option<&[u8; 32]>) -> Result<(), String> {
    finish_known(entry, hash, &HashMap::new(), &BlockHasher::default())
}

/// Like [`finish`], with the blocks' checksums made by `hasher` and those of the blocks already
/// verified in memory in `known` (see [`digest_file_known`]): only the other blocks are read
/// back for the whole-file digest.
pub fn finish_known(
    entry: &Arc<Mutex<Entry>>,
    hash: Option<&[u8; 32]>,
    known: &HashMap<u32, [u8; 32]>,
    hasher: &BlockHasher,
) -> Result<(), String> {
    let mut g = entry
        .lock()
        .map_err(|_| "entry lock poisoned".to_string())?;
    if g.complete {
        return Ok(());
    }
    if let Some(want) = hash {
        let got = digest_file_known(&g.file, g.size, g.buffer_size, known, hasher)
            .map_err(|e| format!("reading back {}: {e}", g.part_path.display()))?;
        if &got != want {
            remove_part(&g);
            return Err(format!(
                "digest of the received file ({}) differs from the sender's ({}); nothing written",
                blake3::Hash::from(got).to_hex(),
                blake3::Hash::from(*want).to_hex()
            ));
        }
    }
    g.file.sync_all().map_err(|e| format!("syncing: {e}"))?;
    // RENAME_NOREPLACE: a file that appeared under the final name meanwhile (placed by a local
    // user, or another transfer's) is not replaced unless --force.
    beneath::rename(
        g.dir.as_fd(),
        leaf(&g.part_path),
        leaf(&g.final_path),
        g.force,
    )
    .map_err(|e| match e.kind() {
        io::ErrorKind::AlreadyExists => format!(
            "{} appeared at the receiver while it was being received (use --force there to \
             replace it); the data stays in {}",
            g.final_path.display(),
            g.part_path.display()
        ),
        _ => format!("renaming into place: {e}"),
    })?;
    if let Some(j) = &g.journal_path {
        let _ = beneath::unlink(g.dir.as_fd(), leaf(j));
    }
    beneath::sync_dir(g.dir.as_fd());
    g.complete = true;
    g.journal = None;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_must_stay_inside() {
        assert_eq!(validate_name("a/b.txt").unwrap(), vec!["a", "b.txt"]);
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "a/../../x",
            "a//b",
            "./a",
            "a/.",
            "a\\b",
            "a\0b",
        ] {
            assert!(validate_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn refuses_symlinks_and_existing_files_and_resumes_from_journal() {
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), d.path().join("link")).unwrap();
        let s = Store::new(d.path(), false).unwrap();
        let h = [7u8; 32];
        let e = s
            .open(&OpenRequest {
                name: "link/x",
                size: 10,
                buffer_size: 4,
                fingerprint: &h,
                resume: false,
                reliable: true,
                shared: false,
                stripe: None,
            })
            .unwrap_err();
        assert_eq!(e.0, RefuseCode::Path);
        fs::write(d.path().join("exists"), b"old").unwrap();
        assert_eq!(
            s.open(&OpenRequest {
                name: "exists",
                size: 10,
                buffer_size: 4,
                fingerprint: &h,
                resume: false,
                reliable: true,
                shared: false,
                stripe: None,
            })
            .unwrap_err()
            .0,
            RefuseCode::Exists
        );
        assert_eq!(fs::read(d.path().join("exists")).unwrap(), b"old");

        let o = s
            .open(&OpenRequest {
                name: "sub/new",
                size: 10,
                buffer_size: 4,
                fingerprint: &h,
                resume: false,
                reliable: true,
                shared: false,
                stripe: None,
            })
            .unwrap();
        write_buffer(&o.entry, 4, 1, b"4567").unwrap();
        s.close(&o.entry, false);
        assert!(!d.path().join("sub/new").exists());
        // Resume: buffer 1 is already there.
        let o = s
            .open(&OpenRequest {
                name: "sub/new",
                size: 10,
                buffer_size: 4,
                fingerprint: &h,
                resume: true,
                reliable: true,
                shared: false,
                stripe: None,
            })
            .unwrap();
        assert_eq!(o.have, vec![(1, 2)]);
        write_buffer(&o.entry, 0, 0, b"0123").unwrap();
        write_buffer(&o.entry, 8, 2, b"89").unwrap();
        let want = crate::proto::file_digest(&[
            *blake3::hash(b"0123").as_bytes(),
            *blake3::hash(b"4567").as_bytes(),
            *blake3::hash(b"89").as_bytes(),
        ]);
        assert!(finish(&o.entry, Some(&[0; 32])).is_err());
        s.close(&o.entry, true);
        assert!(!d.path().join("sub/new").exists());
        let o = s
            .open(&OpenRequest {
                name: "sub/new",
                size: 10,
                buffer_size: 4,
                fingerprint: &want,
                resume: true,
                reliable: true,
                shared: false,
                stripe: None,
            })
            .unwrap();
        assert!(o.have.is_empty(), "the failed part was discarded");
        for (i, c) in [b"0123".as_slice(), b"4567", b"89"].iter().enumerate() {
            write_buffer(&o.entry, i as u64 * 4, i as u32, c).unwrap();
        }
        finish(&o.entry, Some(&want)).unwrap();
        assert_eq!(fs::read(d.path().join("sub/new")).unwrap(), b"0123456789");
        assert_eq!(
            fs::read_dir(d.path().join("sub")).unwrap().count(),
            1,
            "no part or journal left"
        );
    }

    /// A resume that comes at once after its sender was killed finds the file still held by
    /// the dead session (finishing the writes it had queued): it waits for it to let go instead
    /// of being refused; a file held by a live session is refused at once.
    #[test]
    fn a_resume_waits_for_a_session_whose_sender_has_gone() {
        use std::os::fd::AsFd;
        let d = tempfile::tempdir().unwrap();
        let s = Store::new(d.path(), false).unwrap();
        let h = [7u8; 32];
        let req = |resume| OpenRequest {
            name: "f",
            size: 10,
            buffer_size: 4,
            fingerprint: &h,
            resume,
            reliable: true,
            shared: false,
            stripe: None,
        };
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let sender = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (control, _) = l.accept().unwrap();
        let held = s.open_held(&req(false), Some(control.as_fd())).unwrap();
        write_buffer(&held.entry, 0, 0, b"0123").unwrap();
        // The holder's sender is alive: refused at once.
        let t = std::time::Instant::now();
        let e = s.open_held(&req(true), None).unwrap_err();
        assert!(e.1.contains("another transfer"), "{e:?}");
        assert!(t.elapsed() < std::time::Duration::from_secs(1));
        // Its sender gone, the session lets go a moment later: the resume waits and goes on.
        drop(sender);
        std::thread::scope(|sc| {
            sc.spawn(|| {
                std::thread::sleep(std::time::Duration::from_millis(200));
                s.close(&held.entry, false);
            });
            let o = s.open_held(&req(true), None).unwrap();
            assert_eq!(o.have, vec![(0, 1)]);
        });
    }

    /// The sessions of one MBTP transfer open the same name at once; each must create or find
    /// the directories without failing on the others' `mkdir` (a CI failure: "File exists").
    #[test]
    fn concurrent_shared_opens_create_directories_once() {
        let d = tempfile::tempdir().unwrap();
        let s = Store::new(d.path(), false).unwrap();
        let h = [7u8; 32];
        let barrier = std::sync::Barrier::new(8);
        let opened: Vec<_> = std::thread::scope(|sc| {
            let hs: Vec<_> = (0..8)
                .map(|_| {
                    sc.spawn(|| {
                        barrier.wait();
                        s.open(&OpenRequest {
                            name: "a/b/c/d/file",
                            size: 10,
                            buffer_size: 4,
                            fingerprint: &h,
                            resume: false,
                            reliable: false,
                            shared: true,
                            stripe: None,
                        })
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for o in &opened {
            assert!(o.is_ok(), "{:?}", o.as_ref().err());
        }
        assert!(d.path().join("a/b/c/d").is_dir());
    }
}
