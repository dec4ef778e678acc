//! MBTP over separate receivers: where a file striped over R `weft recv` processes ends up, and
//! how `weft join` puts it back together.
//!
//! # The rule
//! When `weft send --mode mbtp --receiver A,B,...` spreads a transfer over R receivers, no
//! receiver holds the whole file, so none writes it under its name. Receiver K of R keeps what
//! it got of file NAME as a *stripe* beside where NAME would be:
//!
//! - `NAME.mbtp-K-of-R`: the buffers it received, one after another in the order they came
//!   (compact: a receiver needs room for its share, not for the file);
//! - `NAME.mbtp-K-of-R.manifest`: which buffer of the file each one is, where it lies in the
//!   stripe, its length, its BLAKE3 as written, and the byte ranges lost on the way and
//!   zero-filled (MBTP is unreliable, as published); with the transfer's id, shared by all R.
//!
//! Both appear when the receiver's share is complete (the data is renamed into place, then the
//! manifest is written: a stripe without its manifest is incomplete), every receiver writes
//! one for every file (with no buffers if the others took them all), and a session that fails
//! leaves neither. `weft join NAME` (the stripes gathered in one directory) or `weft join
//! MANIFEST...` checks that the R stripes belong to one transfer, cover every buffer exactly
//! once and read back with their hashes, and writes NAME atomically, listing the zero-filled
//! gaps. Why not a sparse file of the whole size under NAME at every receiver: it would look
//! complete, take the room of the whole file on every host, and still need a list of which
//! ranges are data; a name that says "stripe 2 of 5" says what it is and how many to gather.
//!
//! When all of a transfer's sessions go to one receiver (`--receivers N` to one host, as the
//! study ran it), that receiver has every buffer and writes NAME itself, as before.

use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::proto::{buffer_len, buffers_in};
use crate::wire::control::Stripe;

/// First field of a manifest: what it is and its version.
pub const MANIFEST_FORMAT: &str = "weft-mbtp-stripe v1";

/// The largest manifest `weft join` reads, bytes (a million buffers of about 150 bytes each).
const MAX_MANIFEST: u64 = 256 << 20;

/// What is wrong with a stripe, its manifest or a set of them.
#[derive(Debug, thiserror::Error)]
pub enum StripeError {
    /// A file could not be read or written.
    #[error("{what}: {error}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        error: io::Error,
    },
    /// A manifest that is not one, or says something impossible.
    #[error("{path}: not a valid stripe manifest: {why}")]
    BadManifest {
        /// Which file.
        path: String,
        /// What is wrong.
        why: String,
    },
    /// The manifests do not make one whole file.
    #[error("{0}")]
    Mismatch(String),
    /// A buffer's bytes in its stripe do not have the hash the manifest gives.
    #[error(
        "{stripe}: buffer {index} (at {at} in the stripe) does not match its BLAKE3: the stripe was damaged after it was written"
    )]
    Damaged {
        /// The stripe's data file.
        stripe: String,
        /// Buffer index in the file.
        index: u32,
        /// Its offset in the stripe.
        at: u64,
    },
}

fn io_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> StripeError {
    let what = what.into();
    move |error| StripeError::Io { what, error }
}

/// The stripe's file name for part `part` of `parts` of `name` (a name or a path).
pub fn stripe_name(name: &str, stripe: &Stripe) -> String {
    format!("{name}.mbtp-{}-of-{}", stripe.part, stripe.parts)
}

/// The manifest's path beside a stripe's data.
pub fn manifest_path(stripe: &Path) -> PathBuf {
    let mut p = stripe.as_os_str().to_owned();
    p.push(".manifest");
    PathBuf::from(p)
}

/// One buffer of the file as a stripe holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StripeBuffer {
    /// Buffer index in the file.
    pub index: u32,
    /// Offset of its bytes in the stripe's data file.
    pub at: u64,
    /// Its length, bytes.
    pub len: u32,
    /// BLAKE3 of the bytes as written (hex).
    pub blake3: String,
    /// Byte ranges of the buffer lost on the way and zero-filled, half-open.
    pub gaps: Vec<(u32, u32)>,
}

/// What a receiver writes beside its stripe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// [`MANIFEST_FORMAT`].
    pub format: String,
    /// The transfer's id (16 hex digits), the same in all R manifests.
    pub transfer: String,
    /// The file's name as sent.
    pub name: String,
    /// The whole file's size, bytes.
    pub size: u64,
    /// Buffer size, bytes.
    pub buffer_size: u32,
    /// This receiver's number, 1..=parts.
    pub part: u16,
    /// How many receivers share the transfer.
    pub parts: u16,
    /// The buffers this stripe holds, in the order they were written.
    pub buffers: Vec<StripeBuffer>,
}

impl Manifest {
    /// An empty manifest of stripe `stripe` of file `name`.
    pub fn new(stripe: &Stripe, name: &str, size: u64, buffer_size: u32) -> Self {
        Manifest {
            format: MANIFEST_FORMAT.into(),
            transfer: format!("{:016x}", stripe.transfer),
            name: name.into(),
            size,
            buffer_size,
            part: stripe.part,
            parts: stripe.parts,
            buffers: Vec::new(),
        }
    }

    /// Parses and checks a manifest (untrusted bytes: errors, never panics). `path` names it
    /// in errors.
    pub fn parse(bytes: &[u8], path: &str) -> Result<Self, StripeError> {
        let bad = |why: String| StripeError::BadManifest {
            path: path.into(),
            why,
        };
        let m: Manifest = serde_json::from_slice(bytes).map_err(|e| bad(e.to_string()))?;
        m.check().map_err(bad)?;
        Ok(m)
    }

    /// The manifest as written (JSON).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Whether the manifest is consistent in itself: known format, a part of the parts, buffers
    /// of the file of their right length, not overlapping in the stripe, gaps inside them.
    fn check(&self) -> Result<(), String> {
        if self.format != MANIFEST_FORMAT {
            return Err(format!(
                "format {:?}, expected {MANIFEST_FORMAT:?}",
                self.format
            ));
        }
        if self.transfer.len() != 16 || u64::from_str_radix(&self.transfer, 16).is_err() {
            return Err(format!(
                "transfer id {:?} is not 16 hex digits",
                self.transfer
            ));
        }
        if self.parts == 0 || self.part == 0 || self.part > self.parts {
            return Err(format!("part {} of {}", self.part, self.parts));
        }
        if self.buffer_size == 0 {
            return Err("buffer size 0".into());
        }
        let nbuf = buffers_in(self.size, self.buffer_size);
        let mut spans: Vec<(u64, u64)> = Vec::with_capacity(self.buffers.len());
        for b in &self.buffers {
            if b.index as u64 >= nbuf {
                return Err(format!("buffer {} of a file of {nbuf} buffers", b.index));
            }
            let want = buffer_len(self.size, self.buffer_size, b.index);
            if b.len != want {
                return Err(format!(
                    "buffer {} is {} bytes, the file's is {want}",
                    b.index, b.len
                ));
            }
            if b.blake3.len() != 64 || !b.blake3.bytes().all(|c| c.is_ascii_hexdigit()) {
                return Err(format!("buffer {}: BLAKE3 is not 64 hex digits", b.index));
            }
            if b.gaps.iter().any(|&(s, e)| s >= e || e > b.len) {
                return Err(format!("buffer {}: a gap outside it", b.index));
            }
            let end = b.at.checked_add(b.len as u64).ok_or("offset overflows")?;
            spans.push((b.at, end));
        }
        spans.sort_unstable();
        if spans.windows(2).any(|w| w[0].1 > w[1].0) {
            return Err("buffers overlap in the stripe".into());
        }
        Ok(())
    }
}

/// A receiver's record of its stripe of one file while it is received: the next free offset in
/// the stripe, and the manifest so far.
#[derive(Debug, Clone)]
pub struct StripeLog {
    /// The manifest, buffers added as they are handed to be written.
    pub manifest: Manifest,
    next: u64,
}

impl StripeLog {
    /// An empty stripe of `name`.
    pub fn new(stripe: &Stripe, name: &str, size: u64, buffer_size: u32) -> Self {
        StripeLog {
            manifest: Manifest::new(stripe, name, size, buffer_size),
            next: 0,
        }
    }

    /// Places buffer `index` of `len` bytes (with its zero-filled `gaps`) at the end of the
    /// stripe; returns its offset there. Its hash comes with [`StripeLog::written`].
    pub fn place(&mut self, index: u32, len: u32, gaps: Vec<(u32, u32)>) -> u64 {
        let at = self.next;
        self.next += len as u64;
        self.manifest.buffers.push(StripeBuffer {
            index,
            at,
            len,
            blake3: String::new(),
            gaps,
        });
        at
    }

    /// Buffer `index` is written and its bytes have BLAKE3 `hash`.
    pub fn written(&mut self, index: u32, hash: &[u8; 32]) {
        if let Some(b) = self.manifest.buffers.iter_mut().find(|b| b.index == index) {
            b.blake3 = blake3::Hash::from(*hash).to_hex().to_string();
        }
    }

    /// Buffers placed so far.
    pub fn buffers(&self) -> usize {
        self.manifest.buffers.len()
    }
}

/// What `weft join` put together.
#[derive(Debug, Clone)]
pub struct Joined {
    /// The file written.
    pub path: PathBuf,
    /// Its name as sent.
    pub name: String,
    /// Its size, bytes.
    pub size: u64,
    /// Stripes it was put together from.
    pub parts: u16,
    /// Buffers, over all stripes.
    pub buffers: u64,
    /// Byte ranges `(offset, len)` lost in the transfer and zero-filled.
    pub gaps: Vec<(u64, u64)>,
}

/// The manifests of the stripes of `name` (a path: `DIR/NAME`) in its directory:
/// `NAME.mbtp-K-of-R.manifest`, by K.
pub fn find_manifests(name: &Path) -> Result<Vec<PathBuf>, StripeError> {
    let dir = match name.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let base = name
        .file_name()
        .and_then(|b| b.to_str())
        .ok_or_else(|| StripeError::Mismatch(format!("{} has no file name", name.display())))?;
    let prefix = format!("{base}.mbtp-");
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io_err(format!("listing {}", dir.display())))?
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.starts_with(&prefix) && n.ends_with(".manifest"))
        .map(|n| dir.join(n))
        .collect();
    found.sort();
    if found.is_empty() {
        return Err(StripeError::Mismatch(format!(
            "no stripes of {base} in {} (expected {base}.mbtp-K-of-R and its .manifest)",
            dir.display()
        )));
    }
    Ok(found)
}

/// Puts the stripes whose manifests are `manifests` (each beside its data) back together into
/// `out`, written atomically, after checking that they are the R stripes of one transfer, that
/// they hold every buffer of the file exactly once, and that every buffer reads back with the
/// hash its receiver wrote it with. Nothing is written if any check fails.
pub fn join(manifests: &[PathBuf], out: &Path) -> Result<Joined, StripeError> {
    let mut parts: BTreeMap<u16, (PathBuf, Manifest)> = BTreeMap::new();
    for p in manifests {
        let shown = p.display().to_string();
        let f = File::open(p).map_err(io_err(format!("opening {shown}")))?;
        let len = f
            .metadata()
            .map_err(io_err(format!("reading {shown}")))?
            .len();
        if len > MAX_MANIFEST {
            return Err(StripeError::BadManifest {
                path: shown,
                why: format!("{len} bytes, more than a manifest ever has"),
            });
        }
        let bytes = std::fs::read(p).map_err(io_err(format!("reading {shown}")))?;
        let m = Manifest::parse(&bytes, &shown)?;
        let (part, data) = (m.part, p.with_extension(""));
        if let Some((other, _)) = parts.insert(part, (data, m)) {
            return Err(StripeError::Mismatch(format!(
                "two manifests of stripe {part} ({} and {shown})",
                other.with_extension("manifest").display()
            )));
        }
    }
    let first = &parts
        .values()
        .next()
        .ok_or_else(|| StripeError::Mismatch("no manifests given".into()))?
        .1;
    let (name, size, bs, transfer, n) = (
        first.name.clone(),
        first.size,
        first.buffer_size,
        first.transfer.clone(),
        first.parts,
    );
    for (path, m) in parts.values() {
        if (
            m.name.as_str(),
            m.size,
            m.buffer_size,
            m.transfer.as_str(),
            m.parts,
        ) != (name.as_str(), size, bs, transfer.as_str(), n)
        {
            return Err(StripeError::Mismatch(format!(
                "{} is stripe {} of {} of {:?} ({} bytes) in transfer {}, not of {name:?} ({size} bytes) in transfer {transfer}",
                path.display(),
                m.part,
                m.parts,
                m.name,
                m.size,
                m.transfer
            )));
        }
    }
    let missing: Vec<String> = (1..=n)
        .filter(|k| !parts.contains_key(k))
        .map(|k| k.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(StripeError::Mismatch(format!(
            "stripe(s) {} of {n} of {name:?} missing (gather every receiver's {name}.mbtp-K-of-{n} and its manifest)",
            missing.join(", ")
        )));
    }
    let nbuf = buffers_in(size, bs);
    let mut owner: Vec<Option<u16>> = vec![None; nbuf as usize];
    for (k, (_, m)) in &parts {
        for b in &m.buffers {
            if let Some(o) = owner[b.index as usize].replace(*k) {
                return Err(StripeError::Mismatch(format!(
                    "buffer {} is in stripes {o} and {k}",
                    b.index
                )));
            }
        }
    }
    if let Some(i) = owner.iter().position(Option::is_none) {
        let absent = owner.iter().filter(|o| o.is_none()).count();
        return Err(StripeError::Mismatch(format!(
            "{absent} buffer(s) of {name:?} in no stripe (the first: buffer {i}): the transfer did not finish"
        )));
    }
    let mut gaps = Vec::new();
    let written = weft_report::write_atomic_with(out, |w| {
        // Buffers in file order, each read from its stripe and checked before it is written.
        let mut by_index: Vec<(&Path, &StripeBuffer)> = parts
            .values()
            .flat_map(|(data, m)| m.buffers.iter().map(move |b| (data.as_path(), b)))
            .collect();
        by_index.sort_by_key(|(_, b)| b.index);
        let mut open: BTreeMap<&Path, File> = BTreeMap::new();
        let mut buf = Vec::new();
        for (data, b) in by_index {
            let f = match open.entry(data) {
                std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::btree_map::Entry::Vacant(e) => e.insert(File::open(data)?),
            };
            buf.resize(b.len as usize, 0);
            f.read_exact_at(&mut buf, b.at)?;
            if blake3::hash(&buf).to_hex().as_str() != b.blake3 {
                return Err(io::Error::other(DamagedMark {
                    stripe: data.display().to_string(),
                    index: b.index,
                    at: b.at,
                }));
            }
            let base = b.index as u64 * bs as u64;
            gaps.extend(
                b.gaps
                    .iter()
                    .map(|&(s, e)| (base + s as u64, (e - s) as u64)),
            );
            w.write_all(&buf)?;
        }
        Ok(())
    });
    if let Err(e) = written {
        if let Some(d) = e.get_ref().and_then(|i| i.downcast_ref::<DamagedMark>()) {
            return Err(StripeError::Damaged {
                stripe: d.stripe.clone(),
                index: d.index,
                at: d.at,
            });
        }
        return Err(StripeError::Io {
            what: format!("writing {}", out.display()),
            error: e,
        });
    }
    Ok(Joined {
        path: out.to_path_buf(),
        name,
        size,
        parts: n,
        buffers: nbuf,
        gaps,
    })
}

/// A damaged buffer, carried out of the atomic writer's closure as an I/O error's payload.
#[derive(Debug)]
struct DamagedMark {
    stripe: String,
    index: u32,
    at: u64,
}

impl std::fmt::Display for DamagedMark {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "buffer {} of {} damaged", self.index, self.stripe)
    }
}

impl std::error::Error for DamagedMark {}

#[cfg(test)]
#[path = "stripe_tests.rs"]
mod tests;
