//! The round trip of a request and its response in closed form: propagation, serialisation on
//! every hop (store and forward, but cell by cell through a switch between two ATM links),
//! switch latency, and the hosts' send and receive costs.

use serde::Serialize;

use crate::host::{Direction, HostCosts};
use crate::tech::{Tech, Transport};
use crate::time::Duration;

/// One link of a path as the round-trip model sees it.
#[derive(Clone, Debug)]
pub struct Hop<'a> {
    /// The link technology (rate, framing, MTU).
    pub tech: &'a Tech,
    /// One-way propagation delay.
    pub propagation: Duration,
    /// Latency of the switch the hop leads into (zero for the last hop, which ends at a host):
    /// the time from the last bit in to the first bit out beyond serialisation.
    pub switch_latency: Duration,
    /// The switch the hop leads into cuts through: a frame goes on to the next hop as its first
    /// bit arrives (plus the latency), so the two hops' serialisations of a frame overlap by the
    /// shorter of them (see [`crate::net::SwitchSpec::cut_through`]).
    pub cut_through: bool,
}

impl<'a> Hop<'a> {
    /// A direct link of `tech` between two hosts: no propagation delay, no switch.
    pub fn direct(tech: &'a Tech) -> Self {
        Hop {
            tech,
            propagation: Duration::ZERO,
            switch_latency: Duration::ZERO,
            cut_through: false,
        }
    }

    /// How much sooner a frame of `datagram` bytes enters `next` than store and forward would
    /// have it: the shorter of its two serialisations if this hop's switch cuts through.
    pub fn overlap(&self, next: Option<&Hop>, datagram: u64) -> Duration {
        match next {
            Some(n) if self.cut_through && !self.tech.is_cells() && !n.tech.is_cells() => self
                .tech
                .wire_time(datagram)
                .min(n.tech.wire_time(datagram)),
            _ => Duration::ZERO,
        }
    }
}

/// The path of `hops` the other way: the links in reverse order, each hop leading into the
/// switch the hop before it led into (the last leads into the host, as the first came from one).
pub fn reverse<'a>(hops: &[Hop<'a>]) -> Vec<Hop<'a>> {
    let n = hops.len();
    (0..n)
        .map(|i| {
            let link = &hops[n - 1 - i];
            let into = (i + 1 < n).then(|| &hops[n - 2 - i]);
            Hop {
                tech: link.tech,
                propagation: link.propagation,
                switch_latency: into.map(|h| h.switch_latency).unwrap_or_default(),
                cut_through: into.is_some_and(|h| h.cut_through),
            }
        })
        .collect()
}

/// A round trip, split by cause.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RttBreakdown {
    /// Propagation, both ways.
    pub propagation: Duration,
    /// Serialisation on every hop, both ways.
    pub serialisation: Duration,
    /// Switch latency, both ways.
    pub switching: Duration,
    /// Host costs: the client's send and receive, the server's receive and send.
    pub hosts: Duration,
    /// Segments held for an acknowledgement (TCP: Nagle's rule and delayed ACKs).
    pub waiting: Duration,
    /// The sum.
    pub total: Duration,
}

/// The cell times of the hop before and of `next` when a frame crosses from one into the other
/// cell by cell: an ATM switch between two ATM links forwards each cell as it arrives (as the
/// simulator's and emulator's switches do), so the frame need not be whole before it leaves.
pub(crate) fn cell_by_cell(prev: Option<&Hop>, next: &Hop) -> Option<(Duration, Duration)> {
    Some((prev?.tech.cell_time()?, next.tech.cell_time()?))
}

/// One direction: a message of `payload` bytes over `hops`, from `from` to `to`.
fn one_way(
    hops: &[Hop],
    transport: Transport,
    payload: u64,
    from: &HostCosts,
    to: &HostCosts,
) -> RttBreakdown {
    // The path MTU decides the packets; each hop is store and forward, so the first packet
    // crosses every hop and the rest follow at the pace of the slowest.
    let mtu = hops.iter().map(|h| h.tech.mtu.0).min().unwrap_or(1500);
    let headers = transport.header_bytes();
    let per_packet = mtu.saturating_sub(headers).max(1);
    let packets = payload.div_ceil(per_packet).max(1);
    let first = payload.min(per_packet) + headers;
    let full = per_packet + headers;
    let last = payload - per_packet * (packets - 1) + headers;
    let mut serialisation = Duration::ZERO;
    let mut slowest = Duration::ZERO;
    let mut prev: Option<&Hop> = None;
    for (i, h) in hops.iter().enumerate() {
        serialisation += match (prev, cell_by_cell(prev, h)) {
            // The frame leaves as its cells arrive: one cell time behind the hop before, or
            // the difference of the two frame times if this hop is the slower.
            (Some(p), Some((cell_in, cell_out))) => cell_out
                .max((h.tech.wire_time(first) + cell_in).saturating_sub(p.tech.wire_time(first))),
            _ => h.tech.wire_time(first),
        };
        // A cut-through switch between two frame links (never cells: see above).
        serialisation = serialisation.saturating_sub(h.overlap(hops.get(i + 1), first));
        slowest = slowest.max(h.tech.wire_time(if packets > 1 { full } else { first }));
        prev = Some(h);
    }
    if packets > 1 {
        let slowest_last = hops
            .iter()
            .map(|h| h.tech.wire_time(last))
            .max()
            .unwrap_or_default();
        serialisation += slowest * (packets - 2) + slowest_last;
    }
    // The receiver waits blocked in its read: the message wakes it.
    let hosts = from.cost(Direction::Send, payload, packets, 1)
        + to.cost(Direction::Receive, payload, packets, 1)
        + to.wakeup();
    let propagation = hops.iter().fold(Duration::ZERO, |a, h| a + h.propagation);
    let switching = hops
        .iter()
        .fold(Duration::ZERO, |a, h| a + h.switch_latency);
    RttBreakdown {
        propagation,
        serialisation,
        switching,
        hosts,
        waiting: Duration::ZERO,
        total: propagation + serialisation + switching + hosts,
    }
}

/// The round trip of a `request` of payload bytes from `client` to `server` over `hops` and a
/// `response` back the same way, on an established connection (TCP) or over UDP: no handshake,
/// no loss, no queueing. Each message is written with one call and read with one; the server
/// pays its daemon's `select` before the read ([`HostCosts::select_ns`]).
pub fn request_response(
    hops: &[Hop],
    transport: Transport,
    request: u64,
    response: u64,
    client: &HostCosts,
    server: &HostCosts,
) -> RttBreakdown {
    let there = one_way(hops, transport, request, client, server);
    let back = reverse(hops);
    let back = one_way(&back, transport, response, server, client);
    let select = server.select();
    RttBreakdown {
        propagation: there.propagation + back.propagation,
        serialisation: there.serialisation + back.serialisation,
        switching: there.switching + back.switching,
        hosts: there.hosts + back.hosts + select,
        waiting: Duration::ZERO,
        total: there.total + back.total + select,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_switch_adds_its_latency_and_a_second_serialisation_each_way() {
        let fddi = Tech::preset("fddi").unwrap();
        let udp = Transport::Udp;
        let direct = [Hop {
            tech: &fddi,
            propagation: Duration(40),
            switch_latency: Duration::ZERO,
            cut_through: false,
        }];
        let via = [
            Hop {
                tech: &fddi,
                propagation: Duration(20),
                switch_latency: Duration::from_nanos(16_500),
                cut_through: false,
            },
            Hop {
                tech: &fddi,
                propagation: Duration(20),
                switch_latency: Duration::ZERO,
                cut_through: false,
            },
        ];
        let free = HostCosts::FREE;
        let a = request_response(&direct, udp, 64, 64, &free, &free);
        let b = request_response(&via, udp, 64, 64, &free, &free);
        let frame = fddi.wire_time(64 + 8 + 20);
        assert_eq!(a.serialisation, frame * 2);
        assert_eq!(b.serialisation, frame * 4);
        assert_eq!(b.switching, Duration(33_000));
        assert_eq!(a.propagation, b.propagation);
        assert_eq!(b.total - a.total, Duration(33_000) + frame * 2);
        // A switch that cuts through adds its latency only, as the GIGAswitch study measured.
        let mut cut = via.clone();
        cut[0].cut_through = true;
        let c = request_response(&cut, udp, 64, 64, &free, &free);
        assert_eq!(c.serialisation, frame * 2);
        assert_eq!(c.total - a.total, Duration(33_000));
    }

    #[test]
    fn an_atm_switch_sends_cells_on_as_they_arrive() {
        let oc3 = Tech::preset("oc3c").unwrap();
        let udp = Transport::Udp;
        let hop = |latency| Hop {
            tech: &oc3,
            propagation: Duration::ZERO,
            switch_latency: latency,
            cut_through: false,
        };
        let direct = [hop(Duration::ZERO)];
        let via = [hop(Duration::from_micros(10)), hop(Duration::ZERO)];
        let free = HostCosts::FREE;
        let a = request_response(&direct, udp, 1500, 1500, &free, &free);
        let b = request_response(&via, udp, 1500, 1500, &free, &free);
        // Each way the second hop adds one cell behind the first, not a second frame.
        let cell = oc3.cell_time().unwrap();
        assert_eq!(b.serialisation, a.serialisation + cell * 2);
        assert_eq!(b.total - a.total, Duration::from_micros(20) + cell * 2);
    }

    #[test]
    fn hosts_pay_a_call_a_packet_and_the_bytes_each_way() {
        let eth = Tech::preset("ethernet10").unwrap();
        let hop = [Hop::direct(&eth)];
        let h = HostCosts {
            send_call_ns: 100_000.0,
            recv_call_ns: 200_000.0,
            send_other_ns_per_byte: 100.0,
            ..HostCosts::FREE
        };
        let r = request_response(&hop, Transport::Tcp { options: 0 }, 1000, 1000, &h, &h);
        // Each way: 100 us + 1000 * 100 ns to send, 200 us to receive.
        assert_eq!(r.hosts, Duration::from_micros(2 * 400));
        // 4000 bytes in three 1460-byte packets: serialisation pipelines.
        let big = request_response(&hop, Transport::Tcp { options: 0 }, 4000, 0, &h, &h);
        let t = |d: u64| eth.wire_time(d);
        assert_eq!(big.serialisation, t(1500) + t(1120) + t(1500) + t(40));
    }

    /// The server's daemon selects once per request; a client that selects (as its host's
    /// costs allow) does not, as it blocks in its read. Without the term both round trips
    /// would be equal.
    #[test]
    fn the_server_pays_its_select_once_a_round_trip() {
        let eth = Tech::preset("ethernet10").unwrap();
        let hop = [Hop::direct(&eth)];
        let daemon = HostCosts {
            select_ns: 50_000.0,
            ..HostCosts::FREE
        };
        let free = HostCosts::FREE;
        let plain = request_response(&hop, Transport::Udp, 64, 64, &free, &free);
        let served = request_response(&hop, Transport::Udp, 64, 64, &free, &daemon);
        assert_eq!(served.hosts, Duration::from_micros(50));
        assert_eq!(served.total - plain.total, Duration::from_micros(50));
        let asking = request_response(&hop, Transport::Udp, 64, 64, &daemon, &free);
        assert_eq!(asking.total, plain.total);
    }
}
