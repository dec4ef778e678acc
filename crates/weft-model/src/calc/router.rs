//! The routers on a path in closed form: what their forwarding processors
//! ([`crate::net::Forwarder`]) let a TCP transfer through, and what they add to its round trip.
//!
//! A router serves one packet at a time on each of its processors, `per_packet + bytes x
//! per_byte` each, data and acknowledgements alike. A bulk TCP transfer sends an ACK for every
//! second segment (delayed ACKs), so each segment of `mtu` bytes costs the router its own
//! service and half an ACK's (40 bytes), and the router carries at most `processors` such
//! costs a second. On the round trip, a segment and its ACK each wait their service, and each
//! is stored whole: where the link into the router carries cells, a plain switch would have
//! passed them on as they came, so the packet's time on that link is added too (on frame links
//! every switch already stores and forwards, which the round leaves to the bottleneck's segment
//! times, as it does for switches).

use crate::net::ForwardingSpec;
use crate::scenario::{Link, Scenario};
use crate::tech::Tech;
use crate::time::Duration;

/// Bytes of a bare TCP acknowledgement (IP and TCP headers).
pub const ACK_BYTES: u64 = 40;

/// A router a path crosses: its processors and the links into it, from each end.
#[derive(Clone, Copy, Debug)]
pub struct RouterHop<'a> {
    /// The router's name.
    pub name: &'a str,
    /// Its forwarding processors.
    pub spec: &'a ForwardingSpec,
    /// The link the data comes in by.
    pub data_in: &'a Tech,
    /// The link the acknowledgements come in by.
    pub ack_in: &'a Tech,
}

/// The routers (`forwarding` switches) on `path`, a list of links from `from`, in order.
pub fn on_path<'a>(s: &'a Scenario, from: &str, path: &[&'a Link]) -> Vec<RouterHop<'a>> {
    let mut out = Vec::new();
    let mut node = from;
    for (i, l) in path.iter().enumerate() {
        node = if l.ends[0] == node {
            &l.ends[1]
        } else {
            &l.ends[0]
        };
        let (Some(next), Some(sw)) = (path.get(i + 1), s.switches.iter().find(|w| w.name == node))
        else {
            continue;
        };
        if let Some(spec) = &sw.forwarding {
            out.push(RouterHop {
                name: &sw.name,
                spec,
                data_in: &l.tech,
                ack_in: &next.tech,
            });
        }
    }
    out
}

/// What the routers of a path do to a bulk TCP transfer in segments of `mtu` bytes (the IP
/// datagram).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RouterBound {
    /// Goodput the busiest router carries at most, all its processors busy with the transfer's
    /// segments and ACKs (Mbit/s of payload).
    pub goodput_mbps: f64,
    /// What the routers add to the round trip: each one's service of a segment and of an ACK,
    /// and their time on a cell link into it, stored whole.
    pub round: Duration,
}

/// The bound of `routers` for datagrams of `mtu` bytes carrying `payload` bytes each, with an
/// ACK for every second one if `acked` (TCP); `None` with no router, or only routers that cost
/// nothing.
pub fn bound(routers: &[RouterHop], mtu: u64, payload: u64, acked: bool) -> Option<RouterBound> {
    let mut goodput: Option<f64> = None;
    let mut round = Duration::ZERO;
    for r in routers {
        let data = r.spec.service(mtu);
        let ack = if acked {
            r.spec.service(ACK_BYTES)
        } else {
            Duration::ZERO
        };
        let per_segment_ns = data.0 as f64 + ack.0 as f64 / 2.0;
        if per_segment_ns > 0.0 {
            let mbps =
                f64::from(r.spec.processors.max(1)) * payload as f64 * 8.0 * 1e3 / per_segment_ns;
            goodput = Some(goodput.map_or(mbps, |g| g.min(mbps)));
        }
        round += data + ack;
        for (link, bytes) in [(r.data_in, mtu), (r.ack_in, ACK_BYTES)] {
            if link.is_cells() && (acked || bytes == mtu) {
                round += link.wire_time(bytes);
            }
        }
    }
    Some(RouterBound {
        goodput_mbps: goodput?,
        round,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_router_bounds_the_segments_and_acks_it_serves() {
        // 100 us a packet and 10 ns a byte: a 4490-byte segment takes 144.9 us, an ACK 100.4;
        // a segment and half an ACK, 195.1 us: 4450 payload bytes in it are 182.5 Mbit/s.
        let spec = ForwardingSpec {
            per_packet: Duration::from_micros(100),
            per_byte_ps: 10_000,
            processors: 1,
            queue: None,
        };
        let oc3 = Tech::preset("oc3c").unwrap();
        let hop = RouterHop {
            name: "r",
            spec: &spec,
            data_in: &oc3,
            ack_in: &oc3,
        };
        let b = bound(&[hop], 4490, 4450, true).unwrap();
        let per_segment = 144_900.0 + 100_400.0 / 2.0;
        assert!((b.goodput_mbps - 4450.0 * 8.0 * 1e3 / per_segment).abs() < 1e-9);
        // Round: both services, and both packets stored off the OC-3c's cells.
        let stored = oc3.wire_time(4490) + oc3.wire_time(40);
        assert_eq!(b.round, Duration(144_900 + 100_400) + stored);
        // Two processors carry twice as much, the round unchanged.
        let two = ForwardingSpec {
            processors: 2,
            ..spec
        };
        let b2 = bound(&[RouterHop { spec: &two, ..hop }], 4490, 4450, true).unwrap();
        assert!((b2.goodput_mbps - 2.0 * b.goodput_mbps).abs() < 1e-9);
        assert_eq!(b2.round, b.round);
        assert_eq!(bound(&[], 4490, 4450, true), None);
    }
}
