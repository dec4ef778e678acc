//! The receiver's pipeline: threads that check each finished buffer's BLAKE3 and write it (and
//! its journal line) off the network thread, then wake the network loop ([`super::recv`]).

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex, mpsc};

use super::store::{self, Entry};
use super::{XferError, sys};
use crate::proto::BlockHasher;

/// A buffer for the pipeline thread: check its BLAKE3 (reliable mode), then write it.
pub(super) struct Job {
    pub(super) seq: u32,
    pub(super) file: u32,
    /// Where to write; `None` with `--discard`.
    pub(super) entry: Option<Arc<Mutex<Entry>>>,
    pub(super) offset: u64,
    pub(super) index: u32,
    pub(super) data: Vec<u8>,
    pub(super) verify: Option<[u8; 32]>,
    /// The session's checksum, for `verify`.
    pub(super) hasher: BlockHasher,
    /// A stripe's buffer: its BLAKE3 as written goes in the stripe's manifest.
    pub(super) record: bool,
}

/// What the pipeline thread did with a buffer.
pub(super) enum JobDone {
    /// Written (with its verified BLAKE3 in reliable mode).
    Written(Option<[u8; 32]>),
    /// The BLAKE3 did not match: nothing written.
    Corrupt,
    /// Writing failed.
    Failed(String),
}

/// Threads checking and writing buffers per session.
const PIPELINE_THREADS: usize = 2;

/// A buffer's outcome from the pipeline: sequence number, file, index, what was done, and the
/// buffer back.
pub(super) type Done = (u32, u32, u32, JobDone, Vec<u8>);

/// The pipeline threads: they check buffers' BLAKE3 and write them (and their journal lines),
/// then wake the network loop; the network thread only receives and reassembles.
pub(super) struct Pipeline {
    pub(super) jobs: mpsc::Sender<Job>,
    pub(super) done: mpsc::Receiver<Done>,
    /// Readable when a thread has finished a buffer.
    pub(super) wake: UnixStream,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Pipeline {
    /// Starts [`PIPELINE_THREADS`] threads: two, so that checking one buffer overlaps writing
    /// another (completion order does not matter: each buffer answers for itself).
    pub(super) fn start() -> Result<Self, XferError> {
        let (jobs, job_rx) = mpsc::channel::<Job>();
        let (done_tx, done) = mpsc::channel();
        let (wake, wake_w) = UnixStream::pair().map_err(|e| XferError::io("wake pipe", e))?;
        wake.set_nonblocking(true)
            .map_err(|e| XferError::io("wake pipe", e))?;
        let job_rx = Arc::new(Mutex::new(job_rx));
        let mut threads = Vec::new();
        for _ in 0..PIPELINE_THREADS {
            let (jobs, done, wake) = (
                job_rx.clone(),
                done_tx.clone(),
                wake_w
                    .try_clone()
                    .map_err(|e| XferError::io("wake pipe", e))?,
            );
            threads.push(std::thread::spawn(move || pipeline(jobs, done, wake)));
        }
        Ok(Pipeline {
            jobs,
            done,
            wake,
            threads,
        })
    }

    /// Closes the queue and waits for the threads to finish the buffers they hold.
    pub(super) fn stop(self) {
        drop(self.jobs);
        for t in self.threads {
            let _ = t.join();
        }
    }
}

/// The pipeline thread: checks and writes buffers in order, off the network thread, and wakes
/// the network loop after each.
fn pipeline(
    jobs: Arc<Mutex<mpsc::Receiver<Job>>>,
    done: mpsc::Sender<(u32, u32, u32, JobDone, Vec<u8>)>,
    mut wake: UnixStream,
) {
    sys::lower_thread_priority();
    loop {
        let next = match jobs.lock() {
            Ok(r) => r.recv(),
            Err(_) => return,
        };
        let Ok(j) = next else { return };
        let hash = j.verify.map(|_| j.hasher.hash(&j.data));
        let outcome = if hash != j.verify {
            JobDone::Corrupt
        } else {
            let written = match &j.entry {
                Some(e) => store::write_buffer(e, j.offset, j.index, &j.data),
                None => Ok(()),
            };
            match written {
                Ok(()) if j.record => JobDone::Written(Some(*blake3::hash(&j.data).as_bytes())),
                Ok(()) => JobDone::Written(hash),
                Err(e) => JobDone::Failed(e.to_string()),
            }
        };
        if done
            .send((j.seq, j.file, j.index, outcome, j.data))
            .is_err()
        {
            break;
        }
        let _ = wake.write(&[1]);
    }
}
