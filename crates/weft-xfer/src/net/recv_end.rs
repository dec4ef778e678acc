//! The end of a received file: put in place (reliable mode once its whole-file digest matches),
//! as a stripe with its manifest, or judged by its verified buffers' hashes (`--discard`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::recv::{FileSlot, RecvOptions};
use super::store::{self, Entry, Store};
use super::stripe::{self, StripeLog};
use crate::proto::BlockHasher;
use crate::wire::Mode;

/// Puts a file whose sender has finished in place (reliable mode: once its whole-file digest
/// matches `digest`) and closes it; says whether it worked and how.
pub(super) fn end_file(
    store: &Store,
    opts: &RecvOptions,
    (mode, hasher): (Mode, &BlockHasher),
    f: &FileSlot,
    digest: &[u8; 32],
) -> (bool, String) {
    let Some(opened) = &f.opened else {
        return end_discarded(mode, f, digest);
    };
    let entry = &opened.entry;
    if let Some(log) = &f.stripe {
        return end_stripe(store, entry, log);
    }
    let result = if mode.is_reliable() {
        let no_hashes = HashMap::new();
        let known = if opts.read_back {
            &no_hashes
        } else {
            &f.hashes
        };
        store::finish_known(entry, Some(digest), known, hasher)
    } else if entry.lock().map(|g| g.all_written()).unwrap_or(false) {
        store::finish(entry, None)
    } else {
        Ok(())
    };
    let (ok, msg) = match result {
        Ok(()) if entry.lock().map(|g| g.complete).unwrap_or(false) => (true, "in place".into()),
        Ok(()) => (true, "part written; other receivers still writing".into()),
        Err(e) => (false, e),
    };
    store.close(entry, !ok);
    (ok, msg)
}

/// Puts a stripe whose sender has finished in place: its data under `NAME.mbtp-K-of-R`, then its
/// manifest beside it (written last: a stripe without a manifest is incomplete).
fn end_stripe(store: &Store, entry: &Arc<Mutex<Entry>>, log: &StripeLog) -> (bool, String) {
    let m = &log.manifest;
    let result = store::finish(entry, None).and_then(|()| {
        let path = entry
            .lock()
            .map(|g| g.final_path.clone())
            .map_err(|_| "entry lock poisoned".to_string())?;
        let manifest = stripe::manifest_path(&path);
        weft_report::write_atomic(&manifest, m.to_json().as_bytes())
            .map_err(|e| format!("writing {}: {e}", manifest.display()))
    });
    let (ok, msg) = match result {
        Ok(()) => {
            let gaps: usize = m.buffers.iter().map(|b| b.gaps.len()).sum();
            (
                true,
                format!(
                    "stripe {} of {} in place ({} buffers, {gaps} gaps); `weft join` puts the {} stripes together",
                    m.part,
                    m.parts,
                    log.buffers(),
                    m.parts
                ),
            )
        }
        Err(e) => (false, e),
    };
    store.close(entry, !ok);
    (ok, msg)
}

/// `--discard`: in reliable mode the whole-file digest is checked from the BLAKE3s of the
/// buffers verified on arrival; nothing was written.
fn end_discarded(mode: Mode, f: &FileSlot, digest: &[u8; 32]) -> (bool, String) {
    if !mode.is_reliable() {
        return (true, "received and discarded (--discard)".into());
    }
    let n = crate::proto::buffers_in(f.size, f.buffer_size);
    let hashes: Option<Vec<&[u8; 32]>> = (0..n).map(|i| f.hashes.get(&(i as u32))).collect();
    match hashes {
        Some(h) if crate::proto::file_digest(h.iter().copied()) == *digest => {
            (true, "verified and discarded (--discard)".into())
        }
        Some(_) => (
            false,
            "digest of the received data differs from the sender's".into(),
        ),
        None => (
            false,
            "hashes of buffers missing at the end of the file (--discard checks only the buffers \
             whose hashes it kept: raise --max-known-hashes)"
                .into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn discarded_slot(hashes: &[[u8; 32]]) -> FileSlot {
        FileSlot {
            opened: None,
            report: 0,
            size: 2500,
            buffer_size: 1000,
            hashes: hashes
                .iter()
                .copied()
                .enumerate()
                .map(|(i, h)| (i as u32, h))
                .collect(),
            stripe: None,
        }
    }

    #[test]
    fn a_discarded_file_is_judged_by_its_verified_buffer_hashes() {
        let h: Vec<[u8; 32]> = (0..3u8).map(|i| *blake3::hash(&[i]).as_bytes()).collect();
        let digest = crate::proto::file_digest(&h);
        let (ok, msg) = end_discarded(Mode::Reliable, &discarded_slot(&h), &digest);
        assert!(ok, "{msg}");
        let (ok, msg) = end_discarded(Mode::Reliable, &discarded_slot(&h), &[0; 32]);
        assert!(!ok && msg.contains("differs"), "{msg}");
        let (ok, msg) = end_discarded(Mode::Reliable, &discarded_slot(&h[..2]), &digest);
        assert!(!ok && msg.contains("missing"), "{msg}");
        // Unreliable modes have no digest to check.
        assert!(end_discarded(Mode::Sbtp, &discarded_slot(&[]), &[0; 32]).0);
    }
}
