//! Host-limited bulk transfer: the rate a host's send or receive path sustains, and the bound on
//! a transfer that is the smallest of the link, the window over the round trip, and the two
//! hosts (with their NIC and bus).

use serde::Serialize;

use super::window::window_rate;
use crate::host::{Direction, HostCosts};
use crate::time::Duration;
use crate::units::{Rate, Size};

/// How a bulk transfer loads a host: the segment size, the application's buffer per system call,
/// the header bytes each packet adds on the wire side of the NIC and the bus, and the ACKs per
/// data segment (0.5 with delayed ACKs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BulkShape {
    /// Payload per segment, bytes.
    pub mss: u64,
    /// Bytes per `write` / `read` (ttcp's `-l`; 8192 by default).
    pub call: u64,
    /// Header bytes per packet that cross the NIC and bus (TCP/IP: 40).
    pub headers: u64,
    /// ACKs per data segment: the sender receives them, the receiver sends them.
    pub acks_per_segment: f64,
}

/// The payload rate, bits/s, that `host`'s `dir` path sustains for a bulk transfer of `shape`:
/// 8 bits over the cost of one byte, with the per-packet cost (and that of the ACKs going the
/// other way) spread over a segment and the per-call cost over a buffer; no more than the NIC
/// and the bus carry once headers are counted, nor than the disk (a file transfer: set
/// [`HostCosts::disk`] only for one).
pub fn host_rate(host: &HostCosts, dir: Direction, shape: &BulkShape) -> Rate {
    let other = match dir {
        Direction::Send => Direction::Receive,
        Direction::Receive => Direction::Send,
    };
    let mss = shape.mss.max(1) as f64;
    let ns_per_byte = host.per_byte_ns(dir)
        + (host.per_packet_ns(dir) + shape.acks_per_segment * host.per_packet_ns(other)) / mss
        + host.per_call_ns(dir) / shape.call.max(1) as f64;
    let cpu = if ns_per_byte > 0.0 {
        8e9 / ns_per_byte
    } else {
        f64::INFINITY
    };
    let payload_share = mss / (mss + shape.headers as f64);
    let io = [host.nic, host.bus]
        .into_iter()
        .flatten()
        .map(|r| r.0 as f64 * payload_share)
        .fold(f64::INFINITY, f64::min);
    let disk = host.disk.map_or(f64::INFINITY, |r| r.0 as f64);
    Rate(cpu.min(io).min(disk).min(u64::MAX as f64) as u64)
}

/// What bounds a bulk transfer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BulkLimit {
    /// The bottleneck link's payload rate.
    Link,
    /// The window over the round trip.
    Window,
    /// The sending host (CPU, NIC or bus).
    Sender,
    /// The receiving host.
    Receiver,
}

/// The closed-form bound on one bulk transfer, every candidate in bits/s of payload.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BulkBound {
    /// The bottleneck link's payload rate.
    pub link_bps: u64,
    /// The window's rate over the round trip.
    pub window_bps: u64,
    /// What the sender's send path sustains.
    pub sender_bps: u64,
    /// What the receiver's receive path sustains.
    pub receiver_bps: u64,
    /// The smallest of them.
    pub bound_bps: u64,
    /// Which one it is.
    pub limit: BulkLimit,
}

impl BulkBound {
    /// min(link, window / rtt, sender, receiver) for a transfer of `shape` from `sender` to
    /// `receiver` over a path whose bottleneck carries `link` of payload.
    pub fn new(
        link: Rate,
        window: Size,
        rtt: Duration,
        sender: &HostCosts,
        receiver: &HostCosts,
        shape: &BulkShape,
    ) -> BulkBound {
        let candidates = [
            (link.0, BulkLimit::Link),
            (window_rate(window, rtt).0, BulkLimit::Window),
            (
                host_rate(sender, Direction::Send, shape).0,
                BulkLimit::Sender,
            ),
            (
                host_rate(receiver, Direction::Receive, shape).0,
                BulkLimit::Receiver,
            ),
        ];
        let (bound, limit) = candidates
            .iter()
            .copied()
            .min_by_key(|c| c.0)
            .unwrap_or((link.0, BulkLimit::Link));
        BulkBound {
            link_bps: candidates[0].0,
            window_bps: candidates[1].0,
            sender_bps: candidates[2].0,
            receiver_bps: candidates[3].0,
            bound_bps: bound,
            limit,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHAPE: BulkShape = BulkShape {
        mss: 1000,
        call: 8000,
        headers: 40,
        acks_per_segment: 0.5,
    };

    #[test]
    fn host_rate_adds_byte_packet_ack_and_call_costs() {
        let h = HostCosts {
            send_packet_ns: 20_000.0,
            recv_packet_ns: 10_000.0,
            send_call_ns: 80_000.0,
            copy_ns_per_byte: 20.0,
            send_copies: 1,
            ..HostCosts::FREE
        };
        // 20 + (20,000 + 0.5 * 10,000) / 1000 + 80,000 / 8000 = 55 ns per byte.
        let r = host_rate(&h, Direction::Send, &SHAPE);
        assert_eq!(r, Rate(145_454_545));
        let nic = HostCosts {
            nic: Some(Rate::mbps(104)),
            ..h
        };
        // The NIC carries 104 Mbit/s of frames: 100 of payload at 1000 + 40.
        assert_eq!(host_rate(&nic, Direction::Send, &SHAPE), Rate::mbps(100));
        // A disk slower still (Sandia's desktop disks: about 16 Mbit/s) bounds a file transfer.
        let disk = HostCosts {
            disk: Some(Rate::mbps(16)),
            ..nic
        };
        assert_eq!(host_rate(&disk, Direction::Send, &SHAPE), Rate::mbps(16));
        assert_eq!(
            host_rate(&HostCosts::FREE, Direction::Receive, &SHAPE),
            Rate(u64::MAX)
        );
    }

    #[test]
    fn the_bound_is_the_smallest_candidate() {
        let slow = HostCosts {
            recv_other_ns_per_byte: 160.0, // 50 Mbit/s
            ..HostCosts::FREE
        };
        let b = BulkBound::new(
            Rate::mbps(100),
            Size(65_536),
            Duration::from_millis(1),
            &HostCosts::FREE,
            &slow,
            &SHAPE,
        );
        assert_eq!(b.limit, BulkLimit::Receiver);
        assert_eq!(b.bound_bps, 50_000_000);
        assert_eq!(b.window_bps, 524_288_000);
        let w = BulkBound::new(
            Rate::mbps(100),
            Size(65_536),
            Duration::from_millis(17),
            &HostCosts::FREE,
            &slow,
            &SHAPE,
        );
        assert_eq!(w.limit, BulkLimit::Window);
    }
}
