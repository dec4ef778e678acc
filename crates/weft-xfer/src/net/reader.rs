//! The sender's reader threads: they read (and hash) a file's buffers ahead of the network loop,
//! taking buffer indices from an allocator that the sessions of an MBTP transfer share.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};

use super::XferError;
use super::send::{SendItem, SendOptions};
use super::source::read_block;
use crate::proto::BlockHasher;

/// Reader threads per file when buffers are hashed.
const READERS: usize = 2;

/// Hands out buffer indices to sessions (shared by the MBTP sessions), skipping those the
/// receiver already holds.
#[derive(Debug)]
pub(crate) struct Alloc {
    pub(crate) next: Vec<u64>,
    pub(crate) nbuf: Vec<u64>,
    pub(crate) have: Vec<Vec<(u32, u32)>>,
}

impl Alloc {
    pub(crate) fn take(&mut self, file: usize) -> Option<u32> {
        loop {
            let i = *self.next.get(file)?;
            if i >= *self.nbuf.get(file)? {
                return None;
            }
            self.next[file] += 1;
            let i = i as u32;
            if !self.have[file].iter().any(|(a, b)| (*a..*b).contains(&i)) {
                return Some(i);
            }
        }
    }
}

/// A buffer read ahead: index in the file, bytes, checksum (zero when not needed).
pub(crate) type Block = (u32, Vec<u8>, [u8; 32]);

/// What a reader thread delivers: blocks, then `None`, or an error.
pub(crate) type BlockRx = mpsc::Receiver<Result<Option<Block>, XferError>>;

/// A file's reader threads (see [`spawn_reader`]), with the channel that takes spent buffers
/// back to them.
pub(crate) type FileReader = (u32, BlockRx, mpsc::Sender<Vec<u8>>);

pub(crate) fn file_reader(
    items: &[SendItem],
    file: u32,
    alloc: &Arc<Mutex<Alloc>>,
    opts: &SendOptions,
    (window, hasher): (u16, BlockHasher),
) -> Result<FileReader, XferError> {
    let item = items
        .get(file as usize)
        .ok_or_else(|| XferError::Local("file number out of range".into()))?;
    let (recycle_tx, recycle_rx) = mpsc::channel();
    let rx = spawn_reader(
        alloc.clone(),
        item.clone(),
        file as usize,
        opts.buffer_size,
        opts.mode.is_reliable().then_some(hasher),
        (window, recycle_rx),
    );
    Ok((file, rx, recycle_tx))
}

/// The reader threads' buffers: recycled by the sender, and at most `cap` of them made, so that
/// a long transfer does not keep allocating (and faulting in) fresh buffers.
struct Pool {
    recycled: Mutex<mpsc::Receiver<Vec<u8>>>,
    made: AtomicUsize,
    cap: usize,
}

impl Pool {
    /// A buffer to fill: one the sender gave back, else a new one while fewer than `cap` were
    /// made, else the next one given back (a new one if none comes within a second, so that a
    /// buffer the sender kept cannot stall the transfer).
    fn take(&self) -> Vec<u8> {
        let Ok(r) = self.recycled.lock() else {
            return Vec::new();
        };
        if let Ok(v) = r.try_recv() {
            return v;
        }
        if self.made.fetch_add(1, Ordering::Relaxed) < self.cap {
            return Vec::new();
        }
        r.recv_timeout(std::time::Duration::from_secs(1))
            .unwrap_or_default()
    }
}

/// Reads (and hashes) the buffers of one file ahead of the network loop, on reader threads (two
/// when hashing, so that hashing one buffer overlaps reading the next and a second core can
/// help), taking indices from the shared allocator; blocks may come out of index order. The last
/// reader to run out of indices sends `None`, after every block.
fn spawn_reader(
    alloc: Arc<Mutex<Alloc>>,
    item: SendItem,
    file: usize,
    buffer_size: u32,
    hash: Option<BlockHasher>,
    (window, recycled): (u16, mpsc::Receiver<Vec<u8>>),
) -> BlockRx {
    let (tx, rx) = mpsc::sync_channel(1);
    let readers = if hash.is_some() { READERS } else { 1 };
    let live = Arc::new(AtomicUsize::new(readers));
    // Buffers in the sender's window, one in the channel, one per reader, and one spare.
    let pool = Arc::new(Pool {
        recycled: Mutex::new(recycled),
        made: AtomicUsize::new(0),
        cap: window as usize + readers + 2,
    });
    for _ in 0..readers {
        let (alloc, item, tx, live, pool) = (
            alloc.clone(),
            item.clone(),
            tx.clone(),
            live.clone(),
            pool.clone(),
        );
        std::thread::spawn(move || {
            super::sys::lower_thread_priority();
            let mut open_file = None;
            loop {
                let idx = match alloc.lock() {
                    Ok(mut a) => a.take(file),
                    Err(_) => {
                        let _ = tx.send(Err(XferError::Local("allocator lock poisoned".into())));
                        return;
                    }
                };
                let Some(idx) = idx else {
                    if live.fetch_sub(1, Ordering::AcqRel) == 1 {
                        let _ = tx.send(Ok(None));
                    }
                    return;
                };
                let reuse = pool.take();
                let r = read_block(
                    &item.source,
                    &mut open_file,
                    item.size,
                    buffer_size,
                    idx,
                    reuse,
                )
                .map(|data| {
                    let h = hash.map_or([0; 32], |h| h.hash(&data));
                    Some((idx, data, h))
                });
                let failed = r.is_err();
                if tx.send(r).is_err() || failed {
                    return;
                }
            }
        });
    }
    rx
}
