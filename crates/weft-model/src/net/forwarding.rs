//! A router's forwarding processor: the CPU or forwarding engine that every packet crossing a
//! store-and-forward router occupies for a time of its own (a cost per packet and per byte)
//! before it reaches its output queue. A switch ([`super::SwitchCore`]) with a
//! [`ForwardingSpec`] hands each frame it has routed to its [`Forwarder`] once the frame is in
//! whole; the forwarder serves the frames one at a time on each of its processors, in the order
//! they arrived, and hands each on when its service ends. Frames that find `queue` frames
//! already waiting for a processor are dropped and counted (a router's input hold queue).
//!
//! The host CPU model ([`crate::host::HostCpu`]) is not used here: it is a shared handle
//! (`Rc`) on a host's threads, wakeups and bus, where a router's processor is a plain FIFO of
//! packets inside the network (which the emulator runs on its own thread).
//!
//! Frames may be handed to the switch before they arrive (a line's trains are computed ahead),
//! so the forwarder keeps them by arrival instant ([`EventQueue`]) and serves each when the
//! network reaches that instant ([`Forwarder::advance`]): arrivals from different ports are
//! served in the order they arrive, not in the order they were handed in. A train a trunk hands
//! on a slot after its arrival is served at once, behind what has already been served. Nothing
//! here reads a clock.

use serde::{Deserialize, Serialize};

use super::frame::{ETH_HEADER, Frame};
use super::train::Train;
use crate::element::PortId;
use crate::engine::EventQueue;
use crate::time::{Duration, Instant};

/// What a router's forwarding path costs each packet, and how many processors serve them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForwardingSpec {
    /// Time a processor spends on each packet whatever its size (ns).
    pub per_packet: Duration,
    /// Time a processor spends on each byte of the packet (the frame less its 14-byte link
    /// header: the IP packet), in picoseconds.
    pub per_byte_ps: u64,
    /// Processors serving packets in parallel, each one packet at a time (at least 1).
    pub processors: u32,
    /// Packets that may wait for a processor; one more arriving is dropped (`None`: no limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<u32>,
}

impl ForwardingSpec {
    /// The time one processor spends on a packet of `bytes` bytes (the IP packet), rounded up
    /// to the nanosecond.
    pub fn service(&self, bytes: u64) -> Duration {
        let per_byte = bytes.saturating_mul(self.per_byte_ps).div_ceil(1000);
        Duration(self.per_packet.0.saturating_add(per_byte))
    }

    /// Packets per second the router forwards at most, all its processors busy, in packets of
    /// `bytes` bytes (the IP packet): `processors / (per_packet + bytes x per_byte)`; `None` for
    /// a router that costs nothing.
    pub fn packet_rate(&self, bytes: u64) -> Option<f64> {
        let s = self.service(bytes).0;
        (s > 0).then(|| f64::from(self.processors.max(1)) * 1e9 / s as f64)
    }
}

/// The counters of a forwarding processor.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct ForwardingStats {
    /// Packets served.
    pub packets: u64,
    /// Packets dropped for finding the queue full.
    pub dropped: u64,
    /// The most packets that waited for a processor at once.
    pub max_waiting: u64,
    /// Time the processors were busy, summed over them (ns).
    pub busy_ns: u64,
    /// Time packets waited for a processor, summed over them (ns).
    pub wait_ns: u64,
}

/// What the forwarder made of a frame it was handed.
#[derive(Debug)]
pub enum Forwarded<F> {
    /// Served: on from port `from` to port `to`, as a whole frame arriving there at the end of
    /// its service (`train.first`).
    On {
        /// The port it came in by.
        from: PortId,
        /// The port it leaves by.
        to: PortId,
        /// The frame, one unit, arriving at the output when its service ended.
        train: Train<F>,
    },
    /// Dropped: the queue was full when it arrived.
    Dropped(Train<F>),
}

/// A router's forwarding processors and the packets waiting for them.
#[derive(Debug)]
pub struct Forwarder<F> {
    spec: ForwardingSpec,
    /// Frames handed in, by the instant their last unit arrives: (from, to, train).
    arriving: EventQueue<(PortId, PortId, Train<F>)>,
    /// When each processor is next free (ns).
    free: Vec<u64>,
    /// The instants at which the packets accepted so far start their service, those not yet
    /// started at the last arrival, earliest first (each starts no earlier than the one before).
    starts: std::collections::VecDeque<u64>,
    /// Counters.
    pub stats: ForwardingStats,
}

impl<F: Frame> Forwarder<F> {
    /// Idle processors of `spec`.
    pub fn new(spec: ForwardingSpec) -> Self {
        Forwarder {
            spec,
            arriving: EventQueue::new(),
            free: vec![0; spec.processors.max(1) as usize],
            starts: std::collections::VecDeque::new(),
            stats: ForwardingStats::default(),
        }
    }

    /// What it costs and how many processors it has.
    pub fn spec(&self) -> &ForwardingSpec {
        &self.spec
    }

    /// Train `t`, routed from port `from` to port `to`, reaches the processors when its last
    /// unit has arrived (the router stores the packet whole).
    pub fn handle_train(&mut self, from: PortId, to: PortId, t: Train<F>) {
        self.arriving.push(Instant(t.last()), (from, to, t));
    }

    /// When the next frame handed in arrives (`None`: nothing is on its way).
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.arriving.peek_time()
    }

    /// Serves every frame that has arrived by `now`, in the order of arrival: each starts when
    /// it has arrived and a processor is free (the one free earliest) and goes on to `out` as a
    /// whole frame arriving at its output when its service ends; or is dropped if `queue`
    /// frames were waiting for a processor when it arrived.
    pub fn advance(&mut self, now: Instant, out: &mut impl FnMut(Forwarded<F>)) {
        while let Some((at, (from, to, mut t))) = self.arriving.pop_due(now) {
            let at = at.0;
            while self.starts.front().is_some_and(|&s| s <= at) {
                self.starts.pop_front();
            }
            let waiting = self.starts.len() as u64;
            if self.spec.queue.is_some_and(|q| waiting >= u64::from(q)) {
                self.stats.dropped += 1;
                out(Forwarded::Dropped(t));
                continue;
            }
            let (p, free) = self
                .free
                .iter()
                .copied()
                .enumerate()
                .min_by_key(|&(i, f)| (f, i))
                .unwrap_or((0, 0));
            let start = free.max(at);
            let work = self
                .spec
                .service(t.frame.frame_len().saturating_sub(ETH_HEADER) as u64)
                .0;
            let end = start.saturating_add(work);
            if let Some(slot) = self.free.get_mut(p) {
                *slot = end;
            }
            if start > at {
                self.starts.push_back(start);
                self.stats.max_waiting = self.stats.max_waiting.max(waiting + 1);
            }
            self.stats.packets += 1;
            self.stats.busy_ns += work;
            self.stats.wait_ns += start - at;
            t.first = end;
            t.spacing = 0;
            t.units = 1;
            out(Forwarded::On { from, to, train: t });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(
        per_packet_ns: u64,
        per_byte_ps: u64,
        processors: u32,
        queue: Option<u32>,
    ) -> ForwardingSpec {
        ForwardingSpec {
            per_packet: Duration(per_packet_ns),
            per_byte_ps,
            processors,
            queue,
        }
    }

    /// A frame of `len` bytes (header included) whose last unit arrives at `at` (ns).
    fn frame(len: usize, at: u64) -> Train<Vec<u8>> {
        Train::between(vec![0u8; len], at, at, 1, 0, 0)
    }

    /// Hands in `frames` (length, arrival) and serves them all: each frame's (length, end of
    /// service), in the order served, and the dropped frames' lengths.
    fn run(f: &mut Forwarder<Vec<u8>>, frames: &[(usize, u64)]) -> (Vec<(usize, u64)>, Vec<usize>) {
        for &(len, at) in frames {
            f.handle_train(0, 1, frame(len, at));
        }
        let (mut on, mut dropped) = (Vec::new(), Vec::new());
        f.advance(Instant(u64::MAX), &mut |x| match x {
            Forwarded::On { train, .. } => on.push((train.frame.len(), train.first)),
            Forwarded::Dropped(t) => dropped.push(t.frame.len()),
        });
        (on, dropped)
    }

    #[test]
    fn a_packet_costs_its_per_packet_and_per_byte_time() {
        // 20 us per packet and 1.5 ns per byte: a 1514-byte frame (1500-byte packet) takes
        // 20 000 + 2250 ns.
        let s = spec(20_000, 1500, 1, None);
        assert_eq!(s.service(1500), Duration(22_250));
        let mut f = Forwarder::new(s);
        let (on, _) = run(&mut f, &[(1514, 1000)]);
        assert_eq!(on, vec![(1514, 23_250)]);
        // 1 / 22.25 us = 44 944 packets per second.
        assert!((s.packet_rate(1500).unwrap() - 1e9 / 22_250.0).abs() < 1e-6);
    }

    #[test]
    fn packets_wait_for_the_processor_one_at_a_time() {
        // Three packets arriving together on one 10 us processor leave 10 us apart: the
        // processor, not their arrival, paces them.
        let mut f = Forwarder::new(spec(10_000, 0, 1, None));
        let (on, _) = run(&mut f, &[(100, 0), (100, 0), (100, 0)]);
        let ends: Vec<u64> = on.iter().map(|x| x.1).collect();
        assert_eq!(ends, vec![10_000, 20_000, 30_000]);
        assert_eq!(f.stats.max_waiting, 2);
        assert_eq!(f.stats.wait_ns, 10_000 + 20_000);
        // Two processors serve two at once.
        let mut two = Forwarder::new(spec(10_000, 0, 2, None));
        let (on, _) = run(&mut two, &[(100, 0), (100, 0), (100, 0)]);
        let ends: Vec<u64> = on.iter().map(|x| x.1).collect();
        assert_eq!(ends, vec![10_000, 10_000, 20_000]);
    }

    #[test]
    fn packets_are_served_in_the_order_they_arrive_not_handed_in() {
        // A long frame handed in first but arriving later waits behind a short one that
        // arrives first.
        let mut f = Forwarder::new(spec(1_000, 1000, 1, None));
        let (on, _) = run(&mut f, &[(9014, 50_000), (114, 2_000)]);
        assert_eq!(on, vec![(114, 3_100), (9014, 60_000)]);
    }

    #[test]
    fn a_full_queue_drops_and_counts() {
        // One processor busy and two waiting: the fourth arrival finds the queue of two full.
        let mut f = Forwarder::new(spec(10_000, 0, 1, Some(2)));
        let (on, dropped) = run(&mut f, &[(100, 0), (200, 1), (300, 2), (400, 3)]);
        assert_eq!(dropped, vec![400]);
        assert_eq!(on.len(), 3);
        assert_eq!(f.stats.dropped, 1);
        // Once the first two have started, there is room again.
        let (on, dropped) = run(&mut f, &[(500, 20_000)]);
        assert!(dropped.is_empty());
        assert_eq!(on, vec![(500, 40_000)]);
    }

    #[test]
    fn frames_not_yet_arrived_wait_for_their_instant() {
        let mut f = Forwarder::new(spec(1_000, 0, 1, None));
        f.handle_train(0, 1, frame(100, 5_000));
        assert_eq!(f.poll_timeout(), Some(Instant(5_000)));
        let mut n = 0;
        f.advance(Instant(4_999), &mut |_| n += 1);
        assert_eq!(n, 0);
        f.advance(Instant(5_000), &mut |_| n += 1);
        assert_eq!((n, f.poll_timeout()), (1, None));
    }
}
