//! Where the sender's bytes come from: files and directories walked into named items, or
//! memory (`weft send --mem`, the ttcp `-s` / iperf3 default), which measures the network and
//! the protocol without any file system.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::{XferError, store};
use crate::proto::buffer_len;

/// The bytes of one item to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A file on disk.
    File(PathBuf),
    /// A pseudo-random pattern generated in memory: block `i` is [`fill_pattern`]'s bytes with
    /// `i` stamped into its first eight, so that no two blocks are alike.
    Memory,
}

impl Source {
    /// How the source is named in messages.
    pub fn describe(&self) -> String {
        match self {
            Source::File(p) => p.display().to_string(),
            Source::Memory => "memory".to_string(),
        }
    }
}

/// Name a memory source gets at the receiver (below the destination directory).
pub const MEMORY_NAME: &str = "weft-memory";

/// Reads block `idx` (of `buffer_size` bytes; the last one shorter) of an item of `size` bytes
/// into `data`, reusing its allocation. `file` caches the open file between calls.
pub fn read_block(
    source: &Source,
    file: &mut Option<File>,
    size: u64,
    buffer_size: u32,
    idx: u32,
    mut data: Vec<u8>,
) -> Result<Vec<u8>, XferError> {
    let len = buffer_len(size, buffer_size, idx) as usize;
    let path = match source {
        Source::Memory => {
            // A recycled block of the right length already holds the pattern: only the stamp
            // changes (iperf3 likewise fills its buffer once).
            if data.len() != len {
                data.resize(len, 0);
                fill_pattern(&mut data);
            }
            let stamp = (idx as u64).to_le_bytes();
            let n = stamp.len().min(len);
            data[..n].copy_from_slice(&stamp[..n]);
            return Ok(data);
        }
        Source::File(p) => p,
    };
    if file.is_none() {
        *file = Some(
            File::open(path)
                .map_err(|e| XferError::io(format!("opening {}", path.display()), e))?,
        );
    }
    let f = file
        .as_ref()
        .ok_or_else(|| XferError::Local("file not open".into()))?;
    // A reused buffer of the right size is overwritten as it is; only growth is zeroed.
    data.resize(len, 0);
    f.read_exact_at(&mut data, idx as u64 * buffer_size as u64)
        .map_err(|e| {
            XferError::io(
                format!(
                    "reading {} (did it shrink while being sent?)",
                    path.display()
                ),
                e,
            )
        })?;
    Ok(data)
}

/// Fills `out` with pseudo-random bytes (weft's one generator, fixed seed): incompressible, and
/// the same every time for the same length.
pub fn fill_pattern(out: &mut [u8]) {
    let mut rng = weft_model::fabric::Rng::new(0x9e37_79b9_7f4a_7c15);
    for chunk in out.chunks_mut(8) {
        let word = rng.next_u64().to_le_bytes();
        chunk.copy_from_slice(&word[..chunk.len()]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_blocks_are_stamped_and_sized() {
        let size = 2 * 1000 + 5;
        let b0 = read_block(&Source::Memory, &mut None, size, 1000, 0, Vec::new()).unwrap();
        let b1 = read_block(&Source::Memory, &mut None, size, 1000, 1, Vec::new()).unwrap();
        let last = read_block(&Source::Memory, &mut None, size, 1000, 2, Vec::new()).unwrap();
        assert_eq!((b0.len(), b1.len(), last.len()), (1000, 1000, 5));
        assert_ne!(b0, b1, "blocks differ by their stamp");
        assert_eq!(b0[8..], b1[8..], "and only by it");
        assert_eq!(&b1[..8], &1u64.to_le_bytes());
        // A recycled block gives the same bytes as a fresh one.
        let again = read_block(&Source::Memory, &mut None, size, 1000, 0, b1).unwrap();
        assert_eq!(again, b0);
        // A short block holds a prefix of the stamp; the pattern does not depend on the length.
        let mut short = [0u8; 13];
        fill_pattern(&mut short);
        assert_eq!(b0[8..13], short[8..]);
        assert_eq!(last, 2u64.to_le_bytes()[..5]);
    }

    #[test]
    fn pattern_is_not_trivially_compressible() {
        let mut p = vec![0u8; 1 << 16];
        fill_pattern(&mut p);
        let mut seen = [0u32; 256];
        for b in &p {
            seen[*b as usize] += 1;
        }
        // Every byte value occurs, none more than twice its share.
        assert!(seen.iter().all(|&n| n > 0 && n < 2 * (1 << 16) / 256));
    }

    #[test]
    fn file_blocks_read_their_range() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let bytes: Vec<u8> = (0..2500u32).map(|i| i as u8).collect();
        std::fs::write(&p, &bytes).unwrap();
        let src = Source::File(p);
        let mut f = None;
        let b2 = read_block(&src, &mut f, 2500, 1000, 2, Vec::new()).unwrap();
        assert_eq!(b2, bytes[2000..]);
        let b1 = read_block(&src, &mut f, 2500, 1000, 1, b2).unwrap();
        assert_eq!(b1, bytes[1000..2000]);
    }
}

/// A file to send and the name it gets at the receiver.
#[derive(Debug, Clone)]
pub struct SendItem {
    /// Where the bytes come from.
    pub source: Source,
    /// Relative name at the receiver.
    pub name: String,
    /// Size, bytes.
    pub size: u64,
}

/// An item of `size` bytes generated in memory (`weft send --mem`), named `dest_dir/weft-memory`
/// at the receiver.
pub fn memory_item(size: u64, dest_dir: &str) -> Result<SendItem, XferError> {
    let prefix = dest_dir.trim_matches('/');
    let name = if prefix.is_empty() {
        MEMORY_NAME.to_string()
    } else {
        format!("{prefix}/{MEMORY_NAME}")
    };
    store::validate_name(&name).map_err(XferError::Local)?;
    Ok(SendItem {
        source: Source::Memory,
        name,
        size,
    })
}

/// Expands files and directories (recursively; symbolic links are skipped) into items named
/// `dest_dir/basename/...`.
pub fn collect_files(paths: &[PathBuf], dest_dir: &str) -> Result<Vec<SendItem>, XferError> {
    let mut out = Vec::new();
    let prefix = dest_dir.trim_matches('/');
    for p in paths {
        let meta = std::fs::symlink_metadata(p)
            .map_err(|e| XferError::io(format!("reading {}", p.display()), e))?;
        let base = p
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| XferError::Local(format!("{} has no usable file name", p.display())))?;
        let name = if prefix.is_empty() {
            base.to_string()
        } else {
            format!("{prefix}/{base}")
        };
        if meta.is_dir() {
            walk(p, &name, &mut out)?;
        } else if meta.is_file() {
            out.push(SendItem {
                source: Source::File(p.clone()),
                name,
                size: meta.len(),
            });
        } else {
            return Err(XferError::Local(format!(
                "{} is not a regular file or directory",
                p.display()
            )));
        }
    }
    for it in &out {
        store::validate_name(&it.name).map_err(XferError::Local)?;
    }
    Ok(out)
}

fn walk(dir: &Path, name: &str, out: &mut Vec<SendItem>) -> Result<(), XferError> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| XferError::io(format!("listing {}", dir.display()), e))?
        .filter_map(Result::ok)
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let Ok(ft) = e.file_type() else { continue };
        let Some(n) = e.file_name().to_str().map(str::to_string) else {
            continue;
        };
        let child = format!("{name}/{n}");
        if ft.is_dir() {
            walk(&e.path(), &child, out)?;
        } else if ft.is_file() {
            let size = e
                .metadata()
                .map_err(|er| XferError::io(format!("reading {}", e.path().display()), er))?
                .len();
            out.push(SendItem {
                source: Source::File(e.path()),
                name: child,
                size,
            });
        }
    }
    Ok(())
}

/// Identity of this version of a file (name, size, modification time), so that a receiver
/// resumes only a journal of the same file.
pub(crate) fn fingerprint(it: &SendItem) -> Result<[u8; 32], XferError> {
    use std::os::unix::fs::MetadataExt;
    let mut h = blake3::Hasher::new();
    h.update(it.name.as_bytes());
    h.update(&it.size.to_be_bytes());
    if let Source::File(path) = &it.source {
        let m = std::fs::metadata(path)
            .map_err(|e| XferError::io(format!("reading {}", path.display()), e))?;
        h.update(&m.mtime().to_be_bytes());
        h.update(&m.mtime_nsec().to_be_bytes());
    }
    Ok(*h.finalize().as_bytes())
}
