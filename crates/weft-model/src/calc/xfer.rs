//! RIACS's SBTP and MBTP (study 004) in closed form: the time of one buffer at each step of the
//! protocol, from the two hosts' costs ([`HostCosts`]) and disks ([`DiskSpec`]), the path's
//! rate for the datagrams and its round trip.
//!
//! One buffer of `B` bytes in `n` datagrams:
//! - the sender reads it: a positioning, `B` at the disk's read rate, and the copy out of the
//!   cache (nothing without a disk: memory to memory);
//! - it sends it: `n` send calls with their packets and bytes on its CPU, or the line, whichever
//!   is slower ("data transfer");
//! - the receiver reads the datagrams on its CPU as they come; if it is slower than the sender,
//!   it is still draining its sockets when the sender's `End` arrives;
//! - the receiver writes the buffer: the copy into the cache, while the disk writes it behind.
//!
//! SBTP, as `weft-xfer` runs it, with RIACS's timers: the sender reads a buffer ("disk I/O"),
//! writes `Start` and waits for `Ready` ("sync": a round trip, and whatever of the receiver's
//! write of the previous buffer the read did not cover), then sends until the receiver's `Done`
//! says the buffer is there ("data transfer": the slower of the sender's sending, the line and
//! the receiver's reading, and a round trip for `End` and `Done`). If the receiver's disk cannot
//! keep up, its time per buffer sets the pace (the writer waits at the cache's dirty limit) and
//! the sender's wait for `Ready` grows by the difference. MBTP, "the merging of multiple copies
//! of SBTP" under one sender: each session reads its own buffer while another's is on the
//! network, and the others' receivers write theirs. A buffer takes the longest of the sender's
//! disk (positioning and platter), its CPU (the copy out of the cache and the sending, one CPU
//! for both), the line, the receiving host's CPU (receive and copy, its receivers sharing it)
//! and its disk; there, transfer is the sending, disk I/O the sender's disk time its CPU does
//! not cover (at least the copy), and sync the rest.

use crate::host::disk::DiskSpec;
use crate::host::{Direction, HostCosts};
use crate::scenario::{XferMode, XferWorkload};
use crate::time::Duration;
use crate::units::{Rate, Size};

/// Bytes of `weft-xfer`'s data header in each datagram.
pub const DATA_HEADER: u64 = 20;

/// One end of a transfer: its costs and its disk (`None`: memory).
#[derive(Clone, Copy, Debug)]
pub struct XferEnd<'a> {
    /// The host's costs.
    pub costs: &'a HostCosts,
    /// Its disk.
    pub disk: Option<&'a DiskSpec>,
}

/// The model's answer: the time of a buffer and its split, and the rate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct XferEstimate {
    /// Time of one buffer in the steady state.
    pub cycle: Duration,
    /// Of it, the sender reading from its disk.
    pub read: Duration,
    /// Data transfer (see the module documentation).
    pub transfer: Duration,
    /// File rate, bits/s.
    pub bps: f64,
}

impl XferEstimate {
    /// The sender waiting for the receivers: the rest of the buffer's time.
    pub fn sync(&self) -> Duration {
        self.cycle.saturating_sub(self.read + self.transfer)
    }

    /// `d` as a percentage of the buffer's time.
    pub fn pct(&self, d: Duration) -> f64 {
        100.0 * d.as_nanos() as f64 / self.cycle.as_nanos().max(1) as f64
    }
}

fn ns(v: f64) -> Duration {
    Duration::from_secs_f64(v.max(0.0) / 1e9)
}

/// Time to copy `bytes` between the cache and a process on `h`.
fn copy(h: &HostCosts, bytes: u64) -> Duration {
    ns(h.copy_ns_per_byte * bytes as f64)
}

/// The steady-state time of one buffer of `w` from `tx` to `rx`, whose datagrams the path
/// carries at `line` bits/s of payload (its slowest link, cells and headers counted), with
/// round trip `rtt`.
pub fn estimate(
    w: &XferWorkload,
    tx: XferEnd<'_>,
    rx: XferEnd<'_>,
    line: Rate,
    rtt: Duration,
) -> XferEstimate {
    let b = w.buffer.0.min(w.file.0).max(1);
    let p = w.packet.0.max(1);
    let n = b.div_ceil(p);
    let dgram = b + n * DATA_HEADER;
    let (platter_read, read_copy) = match tx.disk {
        Some(d) => (
            d.seek + d.read_rate.time_to_send(Size(b)),
            copy(tx.costs, b),
        ),
        None => (Duration::ZERO, Duration::ZERO),
    };
    let cpu_send = tx.costs.cost(Direction::Send, dgram, n, n);
    let on_line = line.time_to_send(Size(b));
    let sending = cpu_send.max(on_line);
    let cpu_recv = rx.costs.cost(Direction::Receive, dgram, n, n);
    // The write call: the copy into the cache, then as much of the platter's time as the
    // cache's dirty limit does not absorb.
    let (write_copy, disk_write, write_call) = match rx.disk {
        Some(d) => {
            let platter = d.seek + d.write_rate.time_to_send(Size(b));
            let absorbed = d.write_rate.time_to_send(Size(d.dirty_limit));
            let c = copy(rx.costs, b);
            (c, platter, c + platter.saturating_sub(absorbed))
        }
        None => (Duration::ZERO, Duration::ZERO, Duration::ZERO),
    };
    let (cycle, read, transfer) = match w.mode {
        XferMode::Sbtp => {
            let read = platter_read + read_copy;
            let transfer = sending.max(cpu_recv) + rtt;
            let wait = rtt + write_call.saturating_sub(read + rtt);
            ((read + wait + transfer).max(disk_write), read, transfer)
        }
        XferMode::Mbtp => {
            let sender = platter_read.max(read_copy + cpu_send).max(on_line);
            let cycle = sender.max(cpu_recv + write_copy).max(disk_write);
            let read = sender.saturating_sub(sending).max(read_copy);
            (cycle, read, sending)
        }
    };
    XferEstimate {
        cycle,
        read,
        transfer,
        bps: b as f64 * 8.0 / cycle.as_secs_f64().max(1e-12),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(send_ns: f64, recv_ns: f64) -> HostCosts {
        HostCosts {
            send_other_ns_per_byte: send_ns,
            recv_other_ns_per_byte: recv_ns,
            ..HostCosts::FREE
        }
    }

    fn work(mode: XferMode) -> XferWorkload {
        XferWorkload {
            mode,
            file: Size(100 << 20),
            buffer: Size(1 << 20),
            packet: Size(9000),
            receivers: 5,
            stripes: 4,
            socket_buffer: Size(41_600),
        }
    }

    #[test]
    fn sbtp_adds_read_transfer_and_round_trips_and_a_slow_disk_sets_the_pace() {
        let h = host(200.0, 100.0);
        let disk = DiskSpec::plain("d", Rate::mbps(40), Duration::from_millis(16));
        let line = Rate::mbps(90);
        let rtt = Duration::from_millis(1);
        let e = estimate(
            &work(XferMode::Sbtp),
            XferEnd {
                costs: &h,
                disk: Some(&disk),
            },
            XferEnd {
                costs: &h,
                disk: None,
            },
            line,
            rtt,
        );
        // 1 MiB at 40 Mbit/s and a seek; 117 datagrams of 9020 bytes at 200 ns a byte.
        let read = Duration::from_millis(16) + Rate::mbps(40).time_to_send(Size(1 << 20));
        assert_eq!(e.read, read);
        assert_eq!(e.transfer, ns(200.0 * (1_048_576.0 + 117.0 * 20.0)) + rtt);
        assert_eq!(e.cycle, read + e.transfer + rtt);
        assert!((e.pct(e.sync()) - 100.0 / e.cycle.as_nanos() as f64 * 1e6).abs() < 1e-9);
        // A receiver whose disk writes through at 5 Mbit/s: its 1.7 s a buffer, during which
        // the sender reads the next and then waits for `Ready`, and the transfer.
        let slow = DiskSpec::plain("s", Rate::mbps(5), Duration::from_millis(16));
        let e2 = estimate(
            &work(XferMode::Sbtp),
            XferEnd {
                costs: &h,
                disk: Some(&disk),
            },
            XferEnd {
                costs: &h,
                disk: Some(&slow),
            },
            line,
            rtt,
        );
        assert_eq!(
            e2.cycle,
            Duration::from_millis(16) + Rate::mbps(5).time_to_send(Size(1 << 20)) + e2.transfer
        );
        assert!(e2.pct(e2.sync()) > 60.0);
    }

    #[test]
    fn mbtp_reads_one_buffer_while_it_sends_another() {
        let h = HostCosts {
            copy_ns_per_byte: 20.0,
            ..host(200.0, 100.0)
        };
        let disk = DiskSpec::plain("d", Rate::mbps(40), Duration::from_millis(16));
        let fast = DiskSpec::plain("f", Rate::mbps(400), Duration::from_millis(16));
        let tx = XferEnd {
            costs: &h,
            disk: Some(&disk),
        };
        let rx = XferEnd {
            costs: &h,
            disk: Some(&fast),
        };
        let m = estimate(
            &work(XferMode::Mbtp),
            tx,
            rx,
            Rate::mbps(90),
            Duration::from_millis(1),
        );
        // The disk's 226 ms a buffer (16 ms and 1 MiB at 40 Mbit/s) under the CPU's copy
        // (21 ms) and sending (210 ms): the CPU's 231 ms, not the 457 ms of both in turn.
        let copy = ns(20.0 * 1_048_576.0);
        let send = ns(200.0 * (1_048_576.0 + 117.0 * 20.0));
        assert_eq!(m.cycle, copy + send);
        assert_eq!(m.transfer, send);
        assert_eq!(m.read, copy);
        // A disk slower than the CPU sets the pace, and the sender waits on it for the rest.
        let slow = DiskSpec::plain("s", Rate::mbps(20), Duration::from_millis(16));
        let s = estimate(
            &work(XferMode::Mbtp),
            XferEnd {
                costs: &h,
                disk: Some(&slow),
            },
            rx,
            Rate::mbps(90),
            Duration::from_millis(1),
        );
        let platter = Duration::from_millis(16) + Rate::mbps(20).time_to_send(Size(1 << 20));
        assert_eq!(s.cycle, platter);
        assert_eq!(s.read, platter - send);
    }

    #[test]
    fn mbtp_overlaps_the_receivers_writes_with_the_sending() {
        let h = host(200.0, 100.0);
        let disk = DiskSpec::plain("d", Rate::mbps(40), Duration::from_millis(16));
        let end = XferEnd {
            costs: &h,
            disk: Some(&disk),
        };
        let line = Rate::mbps(90);
        let rtt = Duration::from_millis(1);
        let s = estimate(&work(XferMode::Sbtp), end, end, line, rtt);
        let m = estimate(&work(XferMode::Mbtp), end, end, line, rtt);
        // The sender's disk (226 ms a buffer) under its sending (210 ms): the disk sets the
        // pace; the receiver's disk (40 Mbit/s) keeps up.
        assert_eq!(
            m.cycle,
            Duration::from_millis(16) + Rate::mbps(40).time_to_send(Size(1 << 20))
        );
        assert!(m.transfer < s.transfer);
        assert!(m.bps > s.bps * 0.99);
    }
}
