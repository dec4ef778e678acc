//! FTP from disk to disk in closed form: a TCP transfer of a file that the sender reads from its
//! disk and the receiver writes to its own, as Sandia's and RIACS's FTP runs moved files (study
//! 000: "limited by the disk speeds of the desktop machines"; study 004, Table 3's ftp column).
//!
//! The network and the hosts' stacks carry the file at `net` bits/s (the smallest of the link,
//! the window over the round trip and the hosts' send and receive paths, as `tput` bounds a
//! memory-to-memory transfer). The disks:
//! - the sender reads the file in order: after one positioning, the file system's read-ahead
//!   fetches the next cluster while the process sends the last, so reading and sending overlap
//!   and the disk bounds the transfer only if its read rate is the lower;
//! - the receiver writes behind its cache: what fits within the cache's dirty limit
//!   ([`DiskSpec::dirty_limit`]) costs nothing, the rest goes to the platter at the write rate
//!   while the transfer goes on (overlap again); a disk with no dirty limit writes through, the
//!   receiving process waiting for the platter after each block instead of reading its socket.
//!   Its socket goes on taking data up to the window meanwhile (the window's acknowledgement
//!   leaves when a block has been read, before it is written), so the network and the writes
//!   overlap, and what the receiver bounds is its own process: each block's receive path
//!   (`rx_path`) and its write, in turn. (The simulator's FTP sink does the same: RIACS's
//!   Table 3 pairs into a TAXI host go as fast as the same window memory to memory.)
//!
//! The copies between the cache and the processes are not charged (a few percent of the hosts'
//! path at the studies' rates: 16 ns per byte on a Sparc 20 against 125 of its send path).

use crate::host::disk::DiskSpec;
use crate::units::Size;

/// What bounds a file transfer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FtpLimit {
    /// The network and the hosts' stacks (`net`).
    Network,
    /// The sender's disk reading the file.
    Read,
    /// The receiver's disk writing it behind its cache.
    Write,
    /// The receiving process: its receive path and its write-through disk, one after the other.
    WriteThrough,
}

/// The model's answer for one file.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FtpEstimate {
    /// Seconds from the first byte read to the last written.
    pub seconds: f64,
    /// The file's rate, bits/s.
    pub bps: f64,
    /// What bounds it.
    pub limit: FtpLimit,
}

/// Seconds a disk's media take for `bytes` at `bps`, after one positioning.
fn media(d: &DiskSpec, bytes: u64, bps: u64) -> f64 {
    if bytes == 0 {
        return 0.0;
    }
    d.seek.as_secs_f64() + bytes as f64 * 8.0 / bps.max(1) as f64
}

/// The time and rate of moving `file` over a network that carries `net` bits/s, from the
/// sender's disk `tx` to the receiver's `rx` (`None`: memory at that end), whose receive path
/// alone carries `rx_path` bits/s (infinite for a host that costs nothing).
pub fn estimate(
    file: Size,
    net: f64,
    rx_path: f64,
    tx: Option<&DiskSpec>,
    rx: Option<&DiskSpec>,
) -> FtpEstimate {
    let bytes = file.0.max(1);
    let on_net = bytes as f64 * 8.0 / net.max(1.0);
    let mut best = (on_net, FtpLimit::Network);
    if let Some(d) = tx {
        let read = media(d, bytes, d.read_rate.0);
        if read > best.0 {
            best = (read, FtpLimit::Read);
        }
    }
    if let Some(d) = rx {
        let spilled = bytes.saturating_sub(d.dirty_limit);
        let write = media(d, spilled, d.write_rate.0);
        let (t, limit) = if d.dirty_limit == 0 {
            let read = bytes as f64 * 8.0 / rx_path.max(1.0);
            (read + write, FtpLimit::WriteThrough)
        } else {
            (write, FtpLimit::Write)
        };
        if t > best.0 {
            best = (t, limit);
        }
    }
    FtpEstimate {
        seconds: best.0,
        bps: bytes as f64 * 8.0 / best.0.max(1e-12),
        limit: best.1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Duration;
    use crate::units::Rate;

    const MB25: Size = Size(25 << 20);

    fn disk(mbps: u64, dirty: u64) -> DiskSpec {
        DiskSpec {
            dirty_limit: dirty,
            ..DiskSpec::plain("d", Rate::mbps(mbps), Duration::from_millis(16))
        }
    }

    #[test]
    fn a_slow_sending_disk_bounds_the_transfer() {
        // 16 Mbit/s desktop disk behind a 45 Mbit/s path: the disk's rate, less one seek.
        let d = disk(16, 0);
        let e = estimate(MB25, 45e6, f64::INFINITY, Some(&d), None);
        assert_eq!(e.limit, FtpLimit::Read);
        let want = 25.0 * 8.0 * 1_048_576.0 / (0.016 + 25.0 * 8.0 * 1_048_576.0 / 16e6);
        assert!((e.bps - want).abs() < 1.0, "{} {want}", e.bps);
        // Without it the network's 45.
        let free = estimate(MB25, 45e6, f64::INFINITY, None, None);
        assert_eq!(free.limit, FtpLimit::Network);
        assert!((free.bps - 45e6).abs() < 1.0);
    }

    #[test]
    fn writing_behind_overlaps_and_writing_through_adds_to_the_receive_path() {
        let net = 30e6;
        // Behind a cache of 384 KiB dirty: the platter's 32 Mbit/s keeps up with 30.
        let behind = estimate(MB25, net, 30e6, None, Some(&disk(32, 384 << 10)));
        assert_eq!(behind.limit, FtpLimit::Network);
        // Through to the platter: the receiving process reads each block at its receive
        // path's 30 Mbit/s and writes it at 32, 1/30 + 1/32 of a bit each, about 15.5 Mbit/s.
        let through = estimate(MB25, net, 30e6, None, Some(&disk(32, 0)));
        assert_eq!(through.limit, FtpLimit::WriteThrough);
        let bits = 25.0 * 8.0 * 1_048_576.0;
        let want = bits / (bits / 30e6 + 0.016 + bits / 32e6);
        assert!((through.bps - want).abs() < 1.0, "{} {want}", through.bps);
        // The network's rate, lower than the receiving process's, is not added to it: the
        // socket takes the next data while the process writes (a window round of the hosts'
        // paths, 12 Mbit/s, into that process's 15.5).
        let windowed = estimate(MB25, 12e6, 30e6, None, Some(&disk(32, 0)));
        assert_eq!(windowed.limit, FtpLimit::Network);
        assert!((windowed.bps - 12e6).abs() < 1.0, "{}", windowed.bps);
        // A file that fits in the dirty limit never waits for the platter.
        let small = estimate(Size(100 << 10), net, 30e6, None, Some(&disk(1, 384 << 10)));
        assert_eq!(small.limit, FtpLimit::Network);
        // A slow platter behind the cache bounds the transfer by its own rate, the last
        // 384 KiB left in the cache.
        let slow = estimate(MB25, net, 30e6, None, Some(&disk(16, 384 << 10)));
        assert_eq!(slow.limit, FtpLimit::Write);
        let want = bits / (0.016 + (bits - 384.0 * 8192.0) / 16e6);
        assert!((slow.bps - want).abs() < 1.0, "{} {want}", slow.bps);
    }
}
