//! A LAN Emulation client's driver on a host's ATM path (study 000, section IV: "When we tested
//! new drivers using the LANE encapsulation, we have seen as much as a 20% degradation in
//! throughput, even after ensuring that the MTU size is the same ... we suspect that this
//! difference is caused by the lack of optimization in the new drivers").
//!
//! The encapsulation itself is the link's ([`crate::tech::Encap::Lane`]: a 2-byte LE header and a
//! 14-byte Ethernet header on each AAL5 PDU); what the driver adds is host work, charged like
//! any other on both of the host's paths: per packet (the LE client's lookup of the destination
//! MAC address's data-direct VC, building or checking the headers) and per byte (a copy to
//! prepend or strip them, if the driver makes one). A scenario gives it on the host whose
//! adapter runs the LANE client (`lane_driver = { packet = "20us", byte = "0ns" }`), and
//! [`crate::scenario::Host::cost_preset`] adds it to the host's preset, so every engine that
//! charges a host's costs charges the driver's.
//!
//! No published cost of a 1995 LANE driver (FORE's ForeThought LEC on Solaris 2.3 or 2.4, or
//! Sun's SunATM) was found; a scenario's value is its own input, and one fitted to study 000's
//! 20% says so.

use super::HostCosts;
use crate::time::Duration;
use serde::Serialize;

/// What a LANE client's driver costs a host on top of its stack, on each of its paths.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct LaneDriver {
    /// CPU time per packet sent and per packet received, ns.
    pub packet: Duration,
    /// CPU time per byte sent and per byte received, ns per byte.
    pub byte: Duration,
}

impl LaneDriver {
    /// `host` with the driver's costs added to its send and receive paths.
    pub fn charged(&self, host: &HostCosts) -> HostCosts {
        let (packet, byte) = (self.packet.0 as f64, self.byte.0 as f64);
        HostCosts {
            send_packet_ns: host.send_packet_ns + packet,
            recv_packet_ns: host.recv_packet_ns + packet,
            send_other_ns_per_byte: host.send_other_ns_per_byte + byte,
            recv_other_ns_per_byte: host.recv_other_ns_per_byte + byte,
            ..host.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::Direction;

    #[test]
    fn the_driver_adds_its_costs_to_both_paths_and_nothing_else() {
        let host = crate::host::tests::host();
        let d = LaneDriver {
            packet: Duration(20_000),
            byte: Duration(5),
        };
        let lane = d.charged(&host);
        for dir in [Direction::Send, Direction::Receive] {
            // One 9,140-byte segment in one packet and one call: 20 us and 5 ns a byte more.
            let more = lane.cost(dir, 9140, 1, 1).0 - host.cost(dir, 9140, 1, 1).0;
            assert_eq!(more, 20_000 + 5 * 9140, "{dir:?}");
            assert_eq!(lane.per_call_ns(dir), host.per_call_ns(dir));
        }
        assert_eq!(lane.copy_ns_per_byte, host.copy_ns_per_byte);
        assert_eq!(lane.wakeup_ns, host.wakeup_ns);
    }
}
