//! Shared FDDI rings in front of switch ports: a concentrator's ring whose stations are hosts
//! and one switch port, as study 003's Figures 3 and 4 wire its workstations. The ring takes
//! the place of those hosts' links: what a host sends waits for the token at its station and
//! crosses the ring to the port's station (or to another host's station on the same ring, which
//! the switch never sees); what the switch sends to such a host waits at the port's station,
//! behind everything else the port has for the ring, and crosses it. Both directions, data and
//! ACKs, share the one token ([`TokenRing`]).
//!
//! [`Ringed`] wraps the network (any [`Element`] whose ports are hosts) and passes the hosts of
//! no ring straight through. A ring is one port of the switch, its first host's (the network
//! routes every host of the ring there): the ring's hosts' frames enter the switch by that
//! port, so they share its input (and its FIFO in an input-queued fabric), and the switch's
//! frames for any of them leave by it, sharing its output queue. The port's link has no rate
//! and no delay (the topology built from a scenario makes it so), so the ring alone
//! serialises the frames: the switch receives a frame when the ring has carried it whole
//! (store and forward) and hands frames for the ring's hosts to the port's station at once.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::frame::{Frame, host_of_mac, is_group};
use super::link::LinkSpec;
use super::ring::{RingSpec, TokenRing};
use crate::element::{Element, PortId};
use crate::time::Instant;

/// One ring of hosts in front of a switch port.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RingSegment {
    /// The ring; its stations are the hosts (0, 1, ... in the order of `hosts`), then stations
    /// that only repeat (a concentrator's own MAC), and last the switch port.
    pub spec: RingSpec,
    /// The hosts on it (indices into the topology's hosts).
    pub hosts: Vec<usize>,
}

impl RingSegment {
    /// The station of the switch port: the ring's last.
    pub fn port_station(&self) -> u32 {
        self.spec.stations.saturating_sub(1)
    }

    /// The host whose switch port is the ring's: its first.
    pub fn port_host(&self) -> Option<usize> {
        self.hosts.first().copied()
    }
}

/// Where a host sits: its ring and station.
#[derive(Clone, Copy, Debug)]
struct Seat {
    ring: usize,
    station: u32,
}

/// A frame on a ring: the host it is from (towards the port) or for (from the port), and
/// whether the switch is where it goes (by the ring's port, unless a broadcast: by its host's).
struct OnRing<F> {
    host: usize,
    to_switch: bool,
    frame: F,
}

/// A network with rings in front of some of its hosts' ports.
pub struct Ringed<F, N> {
    /// The network behind the rings.
    pub inner: N,
    rings: Vec<TokenRing<OnRing<F>>>,
    segments: Vec<RingSegment>,
    seats: Vec<Option<Seat>>,
    /// The host links' framing, for each frame's bytes on a ring.
    links: Vec<LinkSpec>,
    /// Frames the rings have delivered to hosts, in order of arrival: host, instant, frame.
    out: VecDeque<(usize, Instant, F)>,
}

impl<F: Frame, N: Element<F>> Ringed<F, N> {
    /// `inner` with `segments` in front of their hosts, whose links are `links` (by host).
    pub fn new(inner: N, segments: &[RingSegment], links: Vec<LinkSpec>) -> Self {
        let mut seats = vec![None; links.len()];
        for (r, s) in segments.iter().enumerate() {
            for (k, &h) in s.hosts.iter().enumerate() {
                if let Some(seat) = seats.get_mut(h) {
                    *seat = Some(Seat {
                        ring: r,
                        station: k as u32,
                    });
                }
            }
        }
        Ringed {
            inner,
            rings: segments
                .iter()
                .map(|s| TokenRing::new(s.spec.clone()))
                .collect(),
            segments: segments.to_vec(),
            seats,
            links,
            out: VecDeque::new(),
        }
    }

    /// Counters of each ring.
    pub fn ring_stats(&self) -> Vec<super::ring::RingStats> {
        self.rings.iter().map(|r| r.stats.clone()).collect()
    }

    fn seat(&self, host: usize) -> Option<Seat> {
        self.seats.get(host).copied().flatten()
    }

    fn bytes(&self, host: usize, frame: &F) -> u64 {
        self.links.get(host).map_or(frame.frame_len() as u64, |l| {
            l.wire_bytes(frame.frame_len())
        })
    }

    /// Moves every ring on to `now`: frames for the switch go in to it, frames for hosts wait
    /// in `out`; frames the switch has for ringed hosts by `now` are queued at their port's
    /// station; until nothing more happens by `now`.
    fn advance(&mut self, now: Instant) {
        loop {
            let mut moved = false;
            for r in 0..self.rings.len() {
                self.rings[r].handle_timeout(now);
                while let Some((_, t, f)) = self.rings[r].poll_delivered(now) {
                    moved = true;
                    if f.to_switch {
                        let port = if is_group(&f.frame.dst()) {
                            f.host
                        } else {
                            self.segments[r].port_host().unwrap_or(f.host)
                        };
                        self.inner.handle_input(t, port, f.frame);
                    } else {
                        self.out.push_back((f.host, t, f.frame));
                    }
                }
            }
            while let Some((port, due, frame)) = self.inner.poll_output_due(now) {
                moved = true;
                // The ring's port carries frames for all its hosts: the frame's own host.
                let host = host_of_mac(&frame.dst())
                    .filter(|&d| {
                        let ring = |h| self.seat(h).map(|s| s.ring);
                        ring(d).is_some() && ring(d) == ring(port)
                    })
                    .unwrap_or(port);
                match self.seat(host) {
                    Some(seat) => {
                        let port = self.segments[seat.ring].port_station();
                        let bytes = self.bytes(host, &frame);
                        let f = OnRing {
                            host,
                            to_switch: false,
                            frame,
                        };
                        self.rings[seat.ring].handle_frame(due, port, seat.station, bytes, f);
                    }
                    None => self.out.push_back((host, due, frame)),
                }
            }
            if !moved {
                return;
            }
        }
    }
}

impl<F: Frame, N: Element<F>> Element<F> for Ringed<F, N> {
    fn handle_input(&mut self, now: Instant, port: PortId, item: F) {
        let Some(seat) = self.seat(port) else {
            self.inner.handle_input(now, port, item);
            return;
        };
        // The ring first catches up with `now`, so the frame waits for a token yet to come.
        self.rings[seat.ring].handle_timeout(now);
        let bytes = self.bytes(port, &item);
        // A frame for a host on the same ring goes to its station; anything else to the port.
        let local = host_of_mac(&item.dst()).and_then(|d| {
            self.seat(d)
                .filter(|s| s.ring == seat.ring)
                .map(|s| (s.station, d))
        });
        let (station, host, to_switch) = match local {
            Some((st, d)) => (st, d, false),
            None => (self.segments[seat.ring].port_station(), port, true),
        };
        let f = OnRing {
            host,
            to_switch,
            frame: item,
        };
        self.rings[seat.ring].handle_frame(now, seat.station, station, bytes, f);
    }

    fn poll_output(&mut self, now: Instant) -> Option<(PortId, F)> {
        self.poll_output_due(now).map(|(p, _, f)| (p, f))
    }

    fn poll_output_due(&mut self, now: Instant) -> Option<(PortId, Instant, F)> {
        self.advance(now);
        self.out.pop_front()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        if !self.out.is_empty() {
            return Some(Instant::ZERO);
        }
        self.rings
            .iter()
            .filter_map(TokenRing::poll_timeout)
            .chain(self.inner.poll_timeout())
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::Contention;
    use crate::net::{FabricKind, FabricSpec, Network, Topology, host_mac};
    use crate::queue::DropPolicy;
    use crate::time::Duration;
    use crate::units::Rate;

    fn frame(to: usize, from: usize, len: usize) -> Vec<u8> {
        let mut f = vec![0u8; len];
        f[0..6].copy_from_slice(&host_mac(to));
        f[6..12].copy_from_slice(&host_mac(from));
        f
    }

    /// Hosts 0 and 1 on a four-station ring (the two hosts, a repeating MAC, the port), 1 us a
    /// station, no fibre, TTRT 8 ms, in the topology (so the network routes both to the ring's
    /// port); `others` hosts from 2 on ports of their own. Links of no rate and no delay.
    fn ringed_on(others: usize, fabric: FabricSpec) -> Ringed<Vec<u8>, Network<Vec<u8>>> {
        let hosts =
            crate::net::tests::hosts_on(&LinkSpec::ethernet(None, Duration::ZERO), 2 + others);
        let mut topo = Topology::star(hosts, fabric, 1);
        let seg = RingSegment {
            spec: RingSpec::fddi(4, 0.0, Duration::from_micros(1), Duration::from_millis(8)),
            hosts: vec![0, 1],
        };
        topo.rings = vec![seg.clone()];
        let links = topo.hosts.iter().map(|h| h.link.clone()).collect();
        Ringed::new(Network::new(&topo).unwrap(), &[seg], links)
    }

    /// The ring of [`ringed_on`] and host 2 behind an output-queued switch.
    fn ringed() -> Ringed<Vec<u8>, Network<Vec<u8>>> {
        ringed_on(1, FabricSpec::default())
    }

    /// Runs `r` until nothing is left; every delivery as (host, ns, frame length).
    fn drain(r: &mut Ringed<Vec<u8>, Network<Vec<u8>>>) -> Vec<(usize, u64, usize)> {
        let mut got = Vec::new();
        while let Some(t) = r.poll_timeout() {
            while let Some((h, due, f)) = r.poll_output_due(t) {
                got.push((h, due.0, f.len()));
            }
            if got.len() > 1000 {
                break;
            }
        }
        got
    }

    #[test]
    fn a_frame_to_the_switch_waits_for_the_token_and_crosses_the_ring() {
        let mut r = ringed();
        // At 0 the token has just left station 0: it comes back after 4 hops of 1 us. 1000
        // bytes take 80 us; then 3 hops to the port's station (3); the link beyond is instant.
        r.handle_input(Instant(0), 0, frame(2, 0, 1000));
        assert_eq!(drain(&mut r), vec![(2, 4_000 + 80_000 + 3_000, 1000)]);
    }

    #[test]
    fn a_frame_from_the_switch_waits_at_the_port_station() {
        let mut r = ringed();
        // Host 2 is not on the ring: its frame is at the switch at once, then at the port's
        // station (3), which the token reaches at 3 us; 80 us on the line, 1 hop on to host 0.
        r.handle_input(Instant(0), 2, frame(0, 2, 1000));
        assert_eq!(drain(&mut r), vec![(0, 3_000 + 80_000 + 1_000, 1000)]);
    }

    #[test]
    fn a_frame_between_hosts_of_one_ring_stays_on_it() {
        let mut r = ringed();
        r.handle_input(Instant(0), 0, frame(1, 0, 1000));
        assert_eq!(drain(&mut r), vec![(1, 4_000 + 80_000 + 1_000, 1000)]);
        let s = r.inner.host_stats(0).expect("host 0 has a port");
        assert_eq!(s.ingress.frames, 0, "the switch never saw it");
    }

    /// The ring of [`ringed_on`] and hosts 2 and 3 behind an input-queued FIFO fabric of
    /// 10 Mbit/s (a 1000-byte frame is 16 cells of 51.2 us: 819.2 us), slower than the ring.
    fn ringed_fifo() -> Ringed<Vec<u8>, Network<Vec<u8>>> {
        let fabric = FabricSpec {
            kind: FabricKind::InputFifo {
                contention: Contention::Random,
            },
            rate: Rate::mbps(10),
            buffer_cells: 1 << 20,
            drop: DropPolicy::Tail,
        };
        ringed_on(2, fabric)
    }

    /// 1000-byte frames through the fabric of [`ringed_fifo`]: 819.2 us each.
    const FABRIC_FRAME_NS: u64 = 819_200;

    #[test]
    fn frames_for_the_ring_share_its_one_output_port() {
        let mut r = ringed_fifo();
        // 20 frames from c to a and 20 from d to b: on ports of their own they would cross the
        // fabric side by side (20 frame times); through the ring's one port, one after another.
        for _ in 0..20 {
            r.handle_input(Instant(0), 2, frame(0, 2, 1000));
            r.handle_input(Instant(0), 3, frame(1, 3, 1000));
        }
        let got = drain(&mut r);
        assert_eq!(got.iter().filter(|g| g.0 == 0).count(), 20, "{got:?}");
        assert_eq!(got.iter().filter(|g| g.0 == 1).count(), 20, "{got:?}");
        let last = got.iter().map(|g| g.1).max().unwrap();
        assert!(last >= 40 * FABRIC_FRAME_NS, "all in by {last} ns");
        assert!(
            last < 40 * FABRIC_FRAME_NS + 1_000_000,
            "all in by {last} ns"
        );
        let s = r.inner.host_stats(1).expect("host 1 has a port");
        assert_eq!(s.egress.frames_in, 0, "host 1's own port carried nothing");
    }

    #[test]
    fn frames_from_the_ring_share_its_one_input_port() {
        let mut r = ringed_fifo();
        // 20 frames from a to c and 20 from b to d: one input FIFO carries all 40.
        for _ in 0..20 {
            r.handle_input(Instant(0), 0, frame(2, 0, 1000));
            r.handle_input(Instant(0), 1, frame(3, 1, 1000));
        }
        let got = drain(&mut r);
        assert_eq!(got.iter().filter(|g| g.0 == 2).count(), 20, "{got:?}");
        assert_eq!(got.iter().filter(|g| g.0 == 3).count(), 20, "{got:?}");
        let last = got.iter().map(|g| g.1).max().unwrap();
        assert!(last >= 40 * FABRIC_FRAME_NS, "all in by {last} ns");
        assert!(
            last < 40 * FABRIC_FRAME_NS + 1_000_000,
            "all in by {last} ns"
        );
    }

    #[test]
    fn two_hosts_share_one_ring_into_the_switch() {
        let mut r = ringed();
        // 100 frames of 1250 bytes from each ringed host at once: 200 x 100 us on one ring,
        // where two links of their own would deliver them all at once.
        for _ in 0..100 {
            r.handle_input(Instant(0), 0, frame(2, 0, 1250));
            r.handle_input(Instant(0), 1, frame(2, 1, 1250));
        }
        let got = drain(&mut r);
        assert_eq!(got.len(), 200);
        let last = got.iter().map(|g| g.1).max().unwrap();
        assert!(last >= 200 * 100_000, "all in by {last} ns");
        assert!(last < 200 * 100_000 + 200_000, "all in by {last} ns");
    }
}
