//! FTP's data connection from disk to disk (`kind = "tput"` with `file`): a source that reads
//! the file from its host's disk one block at a time and writes each block to its stream, and a
//! sink that writes what it reads to its host's disk, as ftpd's `send_data` and ftp's
//! `recvrequest` loop (`read` from one descriptor, `write` to the other) on Sandia's and RIACS's
//! hosts (study 000: "limited by the disk speeds of the desktop machines"; study 004, Table 3's
//! ftp column). [`crate::calc::ftp`] is the closed form of the same transfer (the model
//! engine); the simulator runs these state machines on its hosts (`weft-sim`'s
//! `net::ftp_workload`).
//!
//! - The source's `read` of a block returns when the disk ([`Disk::read`]) has it in memory:
//!   the file system's read-ahead fetches the next cluster while the process sends, so reading
//!   and sending overlap as far as the disk's read-ahead lets them.
//! - The sink's `write` of what it read returns when the disk ([`Disk::write`]) takes it: at
//!   once behind a cache with room for dirty data, or once it is on the platter (a disk with no
//!   dirty limit writes through). While the process is in that call it reads nothing
//!   ([`Application::busy_until`]): the socket's receive buffer fills and TCP's window closes,
//!   so a write-through disk adds its time to the network's, as in the closed form.
//!
//! The transfer ends when the sink's last write has returned after the source closed
//! ([`FtpSink::finished`]). Copies between the cache and the processes are their host's CPU
//! work, the driver's to charge (the simulator charges the socket calls' copies only).

use super::{Application, Input, Output};
use crate::host::disk::Disk;
use crate::time::Instant;

/// The file the transfer moves, as the disks know it.
pub const FILE: u32 = 1;

/// Bytes of each `read` from the file and `write` to the stream: the file system's block
/// (`st_blksize`, 8 KiB on UFS), which 4.3BSD-Reno's ftpd and ftp size their buffers by.
pub const BLOCK: u64 = 8192;

/// The sending side: reads `size` bytes of [`FILE`] from its disk (`None`: from memory) and
/// writes them, one block at a time, then closes.
#[derive(Clone, Debug)]
pub struct FtpSource {
    disk: Option<Disk>,
    size: u64,
    /// Bytes read from the file (handed to writes, or in the block being read).
    offset: u64,
    /// The block being read is in memory at this instant (`None`: no read under way).
    ready: Option<Instant>,
    /// Its length.
    len: u64,
    writing: bool,
    connected: bool,
    closed: bool,
}

impl FtpSource {
    /// A source of a `size`-byte file on `disk`.
    pub fn new(size: u64, disk: Option<Disk>) -> Self {
        FtpSource {
            disk,
            size,
            offset: 0,
            ready: None,
            len: 0,
            writing: false,
            connected: false,
            closed: false,
        }
    }

    /// The disk, for its counters.
    pub fn disk(&self) -> Option<&Disk> {
        self.disk.as_ref()
    }

    /// Starts the read of the next block at `now`, if the file has one and none is under way.
    fn read_next(&mut self, now: Instant) {
        if self.ready.is_some() || self.writing || self.offset >= self.size {
            return;
        }
        let len = BLOCK.min(self.size - self.offset);
        let at = match &mut self.disk {
            Some(d) => d.read(now, FILE, self.offset, len),
            None => now,
        };
        self.offset += len;
        self.len = len;
        self.ready = Some(at);
    }
}

impl Application for FtpSource {
    fn handle_input(&mut self, now: Instant, input: Input<'_>) {
        match input {
            Input::Written { .. } => {
                self.writing = false;
                self.read_next(now);
            }
            Input::Connected { .. } => self.connected = true,
            _ => {}
        }
    }

    fn handle_timeout(&mut self, _now: Instant) {}

    fn poll_output(&mut self, now: Instant) -> Option<Output> {
        if self.closed || self.writing {
            return None;
        }
        self.read_next(now);
        match self.ready {
            Some(t) if t <= now => {
                self.ready = None;
                self.writing = true;
                Some(Output::Write {
                    stream: 0,
                    len: self.len,
                    tag: None,
                })
            }
            Some(_) => None,
            // Every block written: close once the stream is open.
            None if self.connected => {
                self.closed = true;
                Some(Output::Close { stream: 0 })
            }
            None => None,
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.ready.filter(|_| !self.writing && !self.closed)
    }

    fn is_done(&self) -> bool {
        self.closed
    }
}

/// The receiving side: writes what it reads to [`FILE`] on its disk (`None`: into memory).
#[derive(Clone, Debug)]
pub struct FtpSink {
    disk: Option<Disk>,
    /// Bytes read and not yet written.
    pending: u64,
    /// Bytes written to the file.
    written: u64,
    /// The process is in a `write` until then.
    busy: Option<Instant>,
    /// When the last write returned.
    last: Instant,
    /// The peer closed and everything was read.
    eof: bool,
    /// The sink has closed its side.
    closed: bool,
}

impl FtpSink {
    /// A sink writing to `disk`.
    pub fn new(disk: Option<Disk>) -> Self {
        FtpSink {
            disk,
            pending: 0,
            written: 0,
            busy: None,
            last: Instant::ZERO,
            eof: false,
            closed: false,
        }
    }

    /// The disk, for its counters.
    pub fn disk(&self) -> Option<&Disk> {
        self.disk.as_ref()
    }

    /// Bytes written to the file.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// When the last write returned, once the source has closed and everything is written.
    pub fn finished(&self) -> Option<Instant> {
        (self.eof && self.pending == 0 && self.busy.is_none()).then_some(self.last)
    }

    /// Writes what was read, at `now`, if the process is not in a write already.
    fn write(&mut self, now: Instant) {
        if let Some(t) = self.busy {
            if t > now {
                return;
            }
            self.busy = None;
        }
        if self.pending == 0 {
            return;
        }
        let (off, len) = (self.written, self.pending);
        let done = match &mut self.disk {
            Some(d) => d.write(now, FILE, off, len),
            None => now,
        };
        self.written += len;
        self.pending = 0;
        self.last = done;
        self.busy = (done > now).then_some(done);
    }
}

impl Application for FtpSink {
    fn handle_input(&mut self, now: Instant, input: Input<'_>) {
        match input {
            Input::Read { len, .. } => {
                self.pending += len;
                self.write(now);
            }
            Input::Closed { .. } => self.eof = true,
            _ => {}
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.write(now);
    }

    fn poll_output(&mut self, _now: Instant) -> Option<Output> {
        if self.eof && !self.closed {
            self.closed = true;
            return Some(Output::Close { stream: 0 });
        }
        None
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.busy
    }

    fn busy_until(&self) -> Option<Instant> {
        self.busy
    }

    fn is_done(&self) -> bool {
        self.finished().is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::testing::{Link, Pair};
    use crate::host::disk::DiskSpec;
    use crate::time::Duration;
    use crate::units::Rate;

    const MIB: u64 = 1 << 20;

    /// 8 MB/s (64 Mbit/s), 10 ms positioning, no cache: every access waits for the platter.
    fn disk() -> Disk {
        Disk::new(DiskSpec::plain(
            "t",
            Rate::mbps(64),
            Duration::from_millis(10),
        ))
    }

    fn link() -> Link {
        Link {
            delay: Duration::from_micros(100),
            lose_every: 0,
        }
    }

    /// The source reads each block before it writes it: without read-ahead, 1 MiB from a
    /// plain disk takes one positioning and the platter's time, however fast the stream.
    #[test]
    fn the_source_waits_for_its_disk_before_each_write() {
        let mut p = Pair::stream(
            FtpSource::new(MIB, Some(disk())),
            FtpSink::new(None),
            link(),
        );
        p.run(Instant(Duration::from_secs(10).0));
        let done = p.server.finished().expect("finished");
        assert_eq!(p.server.written(), MIB);
        // 10 ms positioning, then for each of the 128 blocks its 1.024 ms of platter and the
        // 0.1 ms its write takes to return before the next read starts; the last block
        // arrives as its write returns.
        assert_eq!(done, Instant(10_000_000 + 128 * (1_024_000 + 100_000)));
        let d = p.client.disk().unwrap();
        assert_eq!((d.stats.seeks, d.stats.media_read_bytes), (1, MIB));
        // From memory, only the writes' returns.
        let mut p = Pair::stream(FtpSource::new(MIB, None), FtpSink::new(None), link());
        p.run(Instant(Duration::from_secs(10).0));
        assert_eq!(p.server.finished(), Some(Instant(128 * 100_000)));
    }

    /// The sink is busy in each write to a write-through disk and reads nothing meanwhile.
    #[test]
    fn the_sink_is_busy_while_its_disk_writes_through() {
        let mut k = FtpSink::new(Some(disk()));
        let read = |len| Input::Read {
            stream: 0,
            len,
            data: None,
        };
        k.handle_input(Instant::ZERO, read(65536));
        // 10 ms positioning and 8.192 ms of platter.
        let t = Instant(18_192_000);
        assert_eq!((k.busy_until(), k.poll_timeout()), (Some(t), Some(t)));
        // What a driver hands it meanwhile waits for the write to return.
        k.handle_input(Instant(1), read(65536));
        assert_eq!(k.written(), 65536);
        k.handle_timeout(t);
        assert_eq!(k.written(), 2 * 65536);
        assert_eq!(k.busy_until(), Some(Instant(18_192_000 + 8_192_000)));
        k.handle_input(
            t,
            Input::Closed {
                stream: 0,
                error: None,
            },
        );
        assert_eq!(k.finished(), None, "still writing");
        k.handle_timeout(Instant(26_384_000));
        assert_eq!(k.finished(), Some(Instant(26_384_000)));
        // Behind a cache with room for the data, a write returns at once.
        let mut behind = FtpSink::new(Some(Disk::new(DiskSpec {
            cache: 8 * MIB,
            dirty_limit: MIB,
            ..DiskSpec::plain("t", Rate::mbps(64), Duration::from_millis(10))
        })));
        behind.handle_input(Instant::ZERO, read(65536));
        assert_eq!(behind.busy_until(), None);
    }
}
