//! A host's disk behind its buffer cache, sans-IO: a media rate for reading and for writing, a
//! positioning time (seek and rotation) paid whenever an access does not continue where the last
//! one ended, read-ahead of sequential reads, and a cache of file blocks (least recently used)
//! that serves re-reads from memory and absorbs writes up to a dirty limit (write-behind).
//!
//! The disk is one arm serving requests in order, a server with a busy-until time like
//! [`super::HostCpu`]: each call takes `now` and returns the instant the caller may go on (the
//! data are in memory, or the write is accepted or on the platter). Nothing here costs CPU:
//! copying between the cache and the application is the caller's to charge to its CPU.
//!
//! What the studies need from it: RIACS's "disk I/O" share of SBTP (the sender reading each
//! buffer, the receiver writing it while the sender waits), FTP limited by "disk speeds" (Sandia:
//! desktop SCSI disks of ~16 Mbit/s against the file server's 96), and NFS version 2's writes,
//! which the server puts on disk before it answers ([`Disk::write_sync`]).
//!
//! [`presets`] holds the studies' disks, each parameter with its source.

pub mod presets;

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::time::{Duration, Instant};
use crate::units::{Rate, Size};

/// A disk and the share of the buffer cache its files get.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DiskSpec {
    /// A name for output.
    pub name: &'static str,
    /// Sustained media rate reading sequential data through the file system, bits/s.
    pub read_rate: Rate,
    /// Sustained media rate writing, bits/s.
    pub write_rate: Rate,
    /// Positioning time (average seek and half a rotation) paid by an access that does not
    /// continue where the previous one ended.
    pub seek: Duration,
    /// File-system block: the unit the cache keeps and the disk moves, bytes.
    pub block: u64,
    /// Bytes of the buffer cache that hold this disk's blocks (0: no cache, every read goes to
    /// the platter).
    pub cache: u64,
    /// Bytes of written data the cache holds before a writer waits for the disk (0: every write
    /// waits for the platter).
    pub dirty_limit: u64,
    /// Bytes a sequential read fetches beyond what was asked (the file system's read-ahead
    /// cluster), in the background while the reader goes on.
    pub readahead: u64,
    /// Arm time a synchronous write spends on the file's metadata after its data (the inode's
    /// size and times, which NFS version 2's server and `O_SYNC` put on the platter too),
    /// leaving the head off the data: the next write positions again (zero: none).
    pub sync_metadata: Duration,
}

impl DiskSpec {
    /// A disk that reads and writes at `rate` with positioning time `seek`, 8 KiB blocks and no
    /// cache, dirty data or read-ahead.
    pub fn plain(name: &'static str, rate: Rate, seek: Duration) -> Self {
        DiskSpec {
            name,
            read_rate: rate,
            write_rate: rate,
            seek,
            block: 8192,
            cache: 0,
            dirty_limit: 0,
            readahead: 0,
            sync_metadata: Duration::ZERO,
        }
    }

    /// Time the media takes to move `bytes` at `rate`.
    fn media(rate: Rate, bytes: u64) -> Duration {
        rate.time_to_send(Size(bytes))
    }
}

/// Counters of a disk.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DiskStats {
    /// Read calls.
    pub reads: u64,
    /// Bytes asked for by reads.
    pub read_bytes: u64,
    /// Of those, bytes found in the cache.
    pub hit_bytes: u64,
    /// Bytes the arm read from the platter (read-ahead included).
    pub media_read_bytes: u64,
    /// Write calls (sync ones included).
    pub writes: u64,
    /// Bytes written.
    pub write_bytes: u64,
    /// Positioning operations (seeks).
    pub seeks: u64,
    /// Time the arm was busy.
    pub busy: Duration,
    /// Time writers waited beyond their call for the disk (dirty limit or sync).
    pub write_wait: Duration,
}

/// A file's blocks in the cache, least recently used first out, each with the instant its
/// bytes are in memory (a block being fetched is in the cache before it has arrived).
#[derive(Clone, Debug, Default)]
struct BlockCache {
    capacity: u64,
    stamp: u64,
    by_key: HashMap<(u32, u64), (u64, Instant)>,
    by_age: BTreeMap<u64, (u32, u64)>,
}

impl BlockCache {
    fn new(capacity_blocks: u64) -> Self {
        BlockCache {
            capacity: capacity_blocks,
            ..BlockCache::default()
        }
    }

    /// When block `key` is in memory, if it is in the cache.
    fn ready(&self, key: (u32, u64)) -> Option<Instant> {
        self.by_key.get(&key).map(|e| e.1)
    }

    /// Marks `key` as just used, its bytes in memory at `ready`, bringing it in (and the
    /// oldest block out) if need be.
    fn touch(&mut self, key: (u32, u64), ready: Instant) {
        if self.capacity == 0 {
            return;
        }
        self.stamp += 1;
        if let Some((old, _)) = self.by_key.insert(key, (self.stamp, ready)) {
            self.by_age.remove(&old);
        } else if self.by_key.len() as u64 > self.capacity
            && let Some((_, k)) = self.by_age.pop_first()
        {
            self.by_key.remove(&k);
        }
        self.by_age.insert(self.stamp, key);
    }
}

/// One disk with its cache (see the module documentation).
#[derive(Clone, Debug)]
pub struct Disk {
    spec: DiskSpec,
    /// When the arm has done every request queued so far.
    free_at: Instant,
    /// Where the last access of the arm ended: file and byte offset.
    head: Option<(u32, u64)>,
    cache: BlockCache,
    /// Counters.
    pub stats: DiskStats,
}

impl Disk {
    /// An idle disk with an empty cache.
    pub fn new(spec: DiskSpec) -> Self {
        let blocks = spec.cache / spec.block.max(1);
        Disk {
            cache: BlockCache::new(blocks),
            spec,
            free_at: Instant::ZERO,
            head: None,
            stats: DiskStats::default(),
        }
    }

    /// The disk's parameters.
    pub fn spec(&self) -> &DiskSpec {
        &self.spec
    }

    /// When the arm has done everything asked of it so far.
    pub fn busy_until(&self) -> Instant {
        self.free_at
    }

    /// Reads `len` bytes of `file` from `offset`, asked at `now`; returns when they are in
    /// memory. Blocks in the cache cost nothing (but a block still being read ahead is waited
    /// for); the others are read from the platter in runs of consecutive blocks, after whatever
    /// the arm is doing. Each read then has the disk read ahead the next
    /// [`DiskSpec::readahead`] bytes of the file in the background.
    pub fn read(&mut self, now: Instant, file: u32, offset: u64, len: u64) -> Instant {
        self.stats.reads += 1;
        self.stats.read_bytes += len;
        if len == 0 {
            return now;
        }
        let b = self.spec.block.max(1);
        let (first, last) = (offset / b, (offset + len - 1) / b);
        let mut done = now;
        let mut run: Option<(u64, u64)> = None;
        for k in first..=last {
            match self.cache.ready((file, k)) {
                Some(ready) => {
                    self.stats.hit_bytes += block_overlap(k, b, offset, len);
                    self.cache.touch((file, k), ready);
                    done = done.max(ready);
                    if let Some((s, e)) = run.take() {
                        done = done.max(self.fetch(now, file, s, e));
                    }
                }
                None => run = Some(run.map_or((k, k + 1), |(s, _)| (s, k + 1))),
            }
        }
        if let Some((s, e)) = run {
            done = done.max(self.fetch(now, file, s, e));
        }
        if self.spec.readahead > 0 {
            // The next cluster of the file, from its first block not in memory.
            let (s, e) = (last + 1, last + 1 + self.spec.readahead.div_ceil(b));
            if let Some(a) = (s..e).find(|k| self.cache.ready((file, *k)).is_none()) {
                self.fetch(now, file, a, e);
            }
        }
        done
    }

    /// Writes `len` bytes of `file` at `offset`, asked at `now`, behind the cache: the blocks
    /// join the cache and the platter write is queued on the arm. Returns at once while the
    /// data waiting for the platter stay within [`DiskSpec::dirty_limit`], else when enough of
    /// it has reached the platter.
    pub fn write(&mut self, now: Instant, file: u32, offset: u64, len: u64) -> Instant {
        let on_disk = self.queue_write(now, file, offset, len);
        // Bytes still to reach the platter after `now`, at the write rate: the backlog.
        let limit = DiskSpec::media(self.spec.write_rate, self.spec.dirty_limit);
        let ready = Instant(on_disk.as_nanos().saturating_sub(limit.as_nanos())).max(now);
        self.stats.write_wait += ready - now;
        ready
    }

    /// Writes `len` bytes of `file` at `offset`, asked at `now`, and returns when they and
    /// the file's metadata ([`DiskSpec::sync_metadata`]) are on the platter (NFS version 2's
    /// server, `O_SYNC`, `fsync`).
    pub fn write_sync(&mut self, now: Instant, file: u32, offset: u64, len: u64) -> Instant {
        let mut on_disk = self.queue_write(now, file, offset, len);
        let meta = self.spec.sync_metadata;
        if meta > Duration::ZERO {
            on_disk += meta;
            self.free_at = on_disk;
            self.stats.busy += meta;
            self.head = None;
        }
        self.stats.write_wait += on_disk - now;
        on_disk
    }

    /// Queues a platter write of the blocks holding `len` bytes at `offset` of `file`; returns
    /// when it is done.
    fn queue_write(&mut self, now: Instant, file: u32, offset: u64, len: u64) -> Instant {
        self.stats.writes += 1;
        self.stats.write_bytes += len;
        if len == 0 {
            return now.max(self.free_at);
        }
        let b = self.spec.block.max(1);
        for k in offset / b..=(offset + len - 1) / b {
            self.cache.touch((file, k), now);
        }
        let work = DiskSpec::media(self.spec.write_rate, len);
        self.arm(now, file, offset, offset + len, work)
    }

    /// Reads blocks `[s, e)` of `file` from the platter after the arm's queue into the cache;
    /// returns when done.
    fn fetch(&mut self, now: Instant, file: u32, s: u64, e: u64) -> Instant {
        let b = self.spec.block.max(1);
        let bytes = (e - s) * b;
        self.stats.media_read_bytes += bytes;
        let work = DiskSpec::media(self.spec.read_rate, bytes);
        let done = self.arm(now, file, s * b, e * b, work);
        for k in s..e {
            self.cache.touch((file, k), done);
        }
        done
    }

    /// Queues `work` on the arm for bytes `[from, to)` of `file`, with a seek unless the head is
    /// where this access starts; returns when it ends.
    fn arm(&mut self, now: Instant, file: u32, from: u64, to: u64, work: Duration) -> Instant {
        let start = self.free_at.max(now);
        let seek = if self.head == Some((file, from)) {
            Duration::ZERO
        } else {
            self.stats.seeks += 1;
            self.spec.seek
        };
        self.head = Some((file, to));
        self.stats.busy += seek + work;
        self.free_at = start + seek + work;
        self.free_at
    }
}

/// Bytes of block `k` (of `b` bytes) that the range `[offset, offset + len)` covers.
fn block_overlap(k: u64, b: u64, offset: u64, len: u64) -> u64 {
    let (s, e) = (k * b, (k + 1) * b);
    e.min(offset + len).saturating_sub(s.max(offset))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    /// 8 MB/s (64 Mbit/s), 10 ms positioning, no cache.
    fn disk() -> DiskSpec {
        DiskSpec::plain("t", Rate::mbps(64), Duration::from_millis(10))
    }

    /// Reads `total` bytes of `file` in `chunk`-byte calls, each when the previous is done.
    fn read_all(d: &mut Disk, mut now: Instant, file: u32, total: u64, chunk: u64) -> Instant {
        let mut off = 0;
        while off < total {
            now = d.read(now, file, off, chunk.min(total - off));
            off += chunk;
        }
        now
    }

    #[test]
    fn a_sequential_read_runs_at_the_media_rate_after_one_seek() {
        let mut d = Disk::new(disk());
        let end = read_all(&mut d, Instant::ZERO, 1, MIB, 128 << 10);
        // 10 ms to position, then 1 MiB at 8 MB/s: 131.072 ms.
        assert_eq!(end, Instant(10_000_000 + 131_072_000));
        assert_eq!(d.stats.seeks, 1);
        assert_eq!(d.stats.media_read_bytes, MIB);
    }

    #[test]
    fn interleaved_files_pay_a_seek_at_each_switch() {
        let mut d = Disk::new(disk());
        let mut now = Instant::ZERO;
        for k in 0..4 {
            now = d.read(now, 1, k * 65536, 65536);
            now = d.read(now, 2, k * 65536, 65536);
        }
        assert_eq!(d.stats.seeks, 8);
        // 8 seeks and 512 KiB at 8 MB/s.
        assert_eq!(now, Instant(8 * 10_000_000 + 65_536_000));
    }

    #[test]
    fn a_cached_file_is_read_again_without_the_disk() {
        let mut d = Disk::new(DiskSpec {
            cache: 2 * MIB,
            ..disk()
        });
        let first = read_all(&mut d, Instant::ZERO, 1, MIB, 8192);
        let again = read_all(&mut d, first, 1, MIB, 8192);
        assert_eq!(again, first, "every block was in the cache");
        assert_eq!(d.stats.hit_bytes, MIB);
        // A file larger than the cache, read twice in order, finds nothing the second time:
        // each block was pushed out before it was wanted again (LRU).
        let mut d = Disk::new(DiskSpec {
            cache: MIB / 2,
            ..disk()
        });
        let first = read_all(&mut d, Instant::ZERO, 1, MIB, 8192);
        read_all(&mut d, first, 1, MIB, 8192);
        assert_eq!(d.stats.hit_bytes, 0);
    }

    #[test]
    fn read_ahead_overlaps_the_next_cluster_with_the_reader() {
        // 64 KiB read-ahead: the reader spends 10 ms on each 64 KiB it reads (8.192 ms of
        // platter); with read-ahead, each read after the first finds its blocks fetched.
        let spec = DiskSpec {
            cache: 4 * MIB,
            readahead: 65536,
            ..disk()
        };
        let mut d = Disk::new(spec);
        let mut now = Instant::ZERO;
        for k in 0..8 {
            now = d.read(now, 1, k * 65536, 65536) + Duration::from_millis(10);
        }
        // First read: seek and 8.192 ms; the others wait only for the fetch begun a read earlier,
        // which is done by then: 8 x 10 ms of the reader's own work after the first read.
        assert_eq!(now, Instant(10_000_000 + 8_192_000 + 80_000_000));
        // Without read-ahead every read waits for the platter.
        let mut d = Disk::new(DiskSpec {
            readahead: 0,
            ..d.spec().clone()
        });
        let mut slow = Instant::ZERO;
        for k in 0..8 {
            slow = d.read(slow, 1, k * 65536, 65536) + Duration::from_millis(10);
        }
        assert_eq!(slow, Instant(10_000_000 + 8 * 8_192_000 + 80_000_000));
    }

    #[test]
    fn writes_go_behind_the_cache_up_to_the_dirty_limit() {
        let spec = DiskSpec {
            cache: 8 * MIB,
            dirty_limit: MIB,
            ..disk()
        };
        let mut d = Disk::new(spec);
        // 512 KiB: within the limit, the writer goes on at once.
        assert_eq!(d.write(Instant::ZERO, 1, 0, MIB / 2), Instant::ZERO);
        // Another 1 MiB: 1.5 MiB waits for the platter, so the writer waits until 1 MiB is left
        // (10 ms seek + 1.5 MiB at 8 MB/s = 206.608 ms; less 131.072 ms for the last MiB).
        let t = d.write(Instant::ZERO, 1, MIB / 2, MIB);
        assert_eq!(t, Instant(10_000_000 + 196_608_000 - 131_072_000));
        // A sync write waits for everything before it and itself.
        let t = d.write_sync(t, 1, 3 * MIB / 2, 8192);
        assert_eq!(t, Instant(10_000_000 + 196_608_000 + 1_024_000));
        // A written block is in the cache: reading it back costs nothing.
        assert_eq!(d.read(t, 1, 0, 8192), t);
    }

    #[test]
    fn without_a_dirty_limit_every_write_waits_for_the_platter() {
        let mut d = Disk::new(disk());
        let t = d.write(Instant::ZERO, 1, 0, 65536);
        assert_eq!(t, Instant(10_000_000 + 8_192_000));
        assert_eq!(d.stats.write_wait, Duration(18_192_000));
    }

    /// A sync write with metadata waits for it after its data and leaves the head off the
    /// data, so the next sequential sync write positions again; without it, sequential sync
    /// writes stream at the media rate.
    #[test]
    fn a_sync_write_puts_the_metadata_down_and_moves_the_head() {
        let mut plain = Disk::new(disk());
        let a = plain.write_sync(Instant::ZERO, 1, 0, 8192);
        let b = plain.write_sync(a, 1, 8192, 8192);
        assert_eq!(
            (a, b),
            (
                Instant(10_000_000 + 1_024_000),
                Instant(10_000_000 + 2_048_000)
            )
        );
        let mut meta = Disk::new(DiskSpec {
            sync_metadata: Duration::from_millis(5),
            ..disk()
        });
        let a = meta.write_sync(Instant::ZERO, 1, 0, 8192);
        assert_eq!(a, Instant(16_024_000));
        let b = meta.write_sync(a, 1, 8192, 8192);
        assert_eq!(b, Instant(2 * 16_024_000));
        assert_eq!(meta.stats.seeks, 2);
        assert_eq!(meta.stats.busy, Duration(2 * 16_024_000));
    }
}
