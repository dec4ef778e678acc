//! A UDP blast (ttcp -u) between hosts with costs: the sender's `sendto` calls follow one
//! another as fast as its send path lets them (or its link), the receiver's CPU takes each
//! fragment's interrupt and then reads what it can, and what it cannot read its socket buffer
//! drops. The closed form of what the simulator's blocking sender and bounded receive buffer
//! do (`weft-sim`'s `tput` with `proto = "udp"`).

use crate::host::{Direction, HostCosts};
use crate::tech::{Tech, Transport};

/// The IP length of each frame a `payload`-byte UDP datagram leaves in over a path of MTU
/// `mtu` bytes: whole frames of the MTU and the rest, each carrying the UDP and IP headers (a
/// simplification of IP's fragments, which repeat only the IP header).
pub fn ip_fragments(payload: u64, mtu: u32) -> Vec<u32> {
    let headers = Transport::Udp.header_bytes() as u32;
    let per = u64::from(mtu.saturating_sub(headers).max(1));
    let n = payload.div_ceil(per).max(1);
    (0..n)
        .map(|i| (payload - i * per).min(per) as u32 + headers)
        .collect()
}

/// What a blast of `payload`-byte datagrams carries, bits/s of payload, and the share lost.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UdpBlast {
    /// What the sender sends: its send path's rate, or its link's.
    pub sent_bps: f64,
    /// What the receiver reads: no more than the bottleneck link carries nor than its CPU reads
    /// once each arriving fragment's interrupt is paid.
    pub received_bps: f64,
    /// 1 - received / sent.
    pub loss: f64,
}

impl UdpBlast {
    /// A blast of `payload`-byte datagrams from `tx` (on link `first`) to `rx` through the
    /// bottleneck `bottleneck`, path MTU `mtu`.
    pub fn new(
        tx: &HostCosts,
        rx: &HostCosts,
        first: &Tech,
        bottleneck: &Tech,
        payload: u64,
        mtu: u32,
    ) -> UdpBlast {
        let frags = ip_fragments(payload, mtu);
        let n = frags.len() as u64;
        let bits = payload as f64 * 8.0;
        let line = |t: &Tech| {
            let s: f64 = frags
                .iter()
                .map(|&ip| t.wire_time(u64::from(ip)).as_secs_f64())
                .sum();
            bits / s
        };
        let per_datagram = |h: &HostCosts, dir| h.cost(dir, payload, n, 1).as_secs_f64();
        let tx_cpu = per_datagram(tx, Direction::Send);
        let sent_bps = if tx_cpu > 0.0 {
            (bits / tx_cpu).min(line(first))
        } else {
            line(first)
        };
        let arriving = sent_bps.min(line(bottleneck)) / bits;
        // Each arriving fragment's interrupt first, the reads in the CPU time left.
        let interrupts = arriving * rx.cost(Direction::Receive, 0, n, 0).as_secs_f64();
        let read = rx.cost(Direction::Receive, payload, 0, 1).as_secs_f64();
        let readable = if read > 0.0 {
            (1.0 - interrupts).max(0.0) / read
        } else {
            f64::INFINITY
        };
        let received_bps = arriving.min(readable) * bits;
        UdpBlast {
            sent_bps,
            received_bps,
            loss: (1.0 - received_bps / sent_bps).max(0.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taxi() -> Tech {
        Tech::preset("taxi100").unwrap()
    }

    #[test]
    fn fragments_fill_the_mtu_and_carry_the_rest() {
        assert_eq!(ip_fragments(64, 1500), vec![92]);
        assert_eq!(ip_fragments(1500, 1500), vec![1500, 56]);
        assert_eq!(ip_fragments(0, 1500), vec![28]);
    }

    /// A sender at 340.5 ns a byte into a receiver at 353.5: the receiver reads 8000 / 353.5
    /// Mbit/s and the rest, 3.7%, is lost; the other way round nothing is. Without the
    /// receiver's bound both would carry the sender's rate.
    #[test]
    fn a_slower_receiver_loses_what_it_cannot_read() {
        let host = |ns: f64| HostCosts {
            send_other_ns_per_byte: ns,
            recv_other_ns_per_byte: ns,
            ..HostCosts::FREE
        };
        let (fast, slow) = (host(340.5), host(353.5));
        let b = UdpBlast::new(&fast, &slow, &taxi(), &taxi(), 9000, 9180);
        assert!((b.sent_bps - 8e9 / 340.5).abs() < 1.0, "{b:?}");
        assert!((b.received_bps - 8e9 / 353.5).abs() < 1.0, "{b:?}");
        assert!((b.loss - (1.0 - 340.5 / 353.5)).abs() < 1e-9, "{b:?}");
        let back = UdpBlast::new(&slow, &fast, &taxi(), &taxi(), 9000, 9180);
        assert_eq!(back.loss, 0.0);
    }

    /// A free sender goes at its link's rate (10 Mbit/s Ethernet: about 1200 datagrams of 1000
    /// bytes a second); the receiver's interrupts, 100 us each, come first, and its reads of
    /// 1 ms each share what CPU time they leave. Without the interrupts' share it would read
    /// 1000 a second.
    #[test]
    fn interrupts_take_their_share_of_the_receiver_first() {
        let link = Tech::preset("ethernet10").unwrap();
        let rx = HostCosts {
            recv_packet_ns: 100_000.0,
            recv_call_ns: 1e6,
            ..HostCosts::FREE
        };
        let b = UdpBlast::new(&HostCosts::FREE, &rx, &link, &link, 1000, 1500);
        let arriving = b.sent_bps / 8000.0;
        let expect = (1.0 - arriving * 1e-4) / 1e-3;
        assert!((b.received_bps / 8000.0 - expect).abs() < 1e-6, "{b:?}");
        assert!(b.loss > 0.0);
    }
}
