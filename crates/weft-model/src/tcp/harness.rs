//! Test-only: two endpoints joined by one pipe each way. A pipe is a drop-tail bottleneck (rate
//! and queue limit) followed by a fixed delay, with seeded random loss, reordering (an extra
//! delay) and duplication, and an optional filter that drops chosen segments. Deliberately not a
//! general simulator: when the shared event engine exists, tests can move onto it by swapping
//! [`Sim`] for it, as they only use `run_until` and the endpoints.

use std::collections::{BTreeMap, VecDeque};

use super::bytes::ByteConnection;
use super::conn::Connection;
use super::segment::Segment;
use crate::rng::Rng;
use crate::time::{Duration, Instant};
use crate::units::{Rate, Size};

/// What the pipe needs of an endpoint.
pub trait Endpoint {
    /// What travels with a segment: nothing for a length-only connection, bytes otherwise.
    type Payload: Clone;
    /// A segment arrives; `ce` if a queue marked it Congestion Experienced.
    fn handle(&mut self, now: Instant, seg: &Segment, payload: &Self::Payload, ce: bool);
    fn poll(&mut self, now: Instant) -> Option<(Segment, Self::Payload)>;
    fn timeout(&self) -> Option<Instant>;
    fn on_timeout(&mut self, now: Instant);
}

impl Endpoint for Connection {
    type Payload = ();
    fn handle(&mut self, now: Instant, seg: &Segment, _: &(), ce: bool) {
        self.handle_segment_ecn(now, seg, ce);
    }
    fn poll(&mut self, now: Instant) -> Option<(Segment, ())> {
        self.poll_transmit(now).map(|s| (s, ()))
    }
    fn timeout(&self) -> Option<Instant> {
        self.poll_timeout()
    }
    fn on_timeout(&mut self, now: Instant) {
        self.handle_timeout(now)
    }
}

impl Endpoint for ByteConnection {
    type Payload = Vec<u8>;
    fn handle(&mut self, now: Instant, seg: &Segment, payload: &Vec<u8>, _ce: bool) {
        self.handle_segment(now, seg, payload);
    }
    fn poll(&mut self, now: Instant) -> Option<(Segment, Vec<u8>)> {
        let mut p = Vec::new();
        self.poll_transmit(now, &mut p).map(|s| (s, p))
    }
    fn timeout(&self) -> Option<Instant> {
        self.poll_timeout()
    }
    fn on_timeout(&mut self, now: Instant) {
        self.handle_timeout(now)
    }
}

/// One direction's impairments.
#[derive(Clone, Debug)]
pub struct PipeConfig {
    /// One-way propagation delay.
    pub delay: Duration,
    /// Bottleneck rate (None: no serialisation, no queue).
    pub rate: Option<Rate>,
    /// Drop-tail limit: segments queued at the bottleneck, the one being sent included.
    pub queue: usize,
    /// Per-segment probability of loss, of an extra `reorder_delay`, of a duplicate.
    pub loss: f64,
    pub reorder: f64,
    pub reorder_delay: Duration,
    pub duplicate: f64,
    /// ECN marking: a data segment that finds this many or more queued at the bottleneck is
    /// marked Congestion Experienced instead of passing unmarked (DCTCP's step threshold K).
    pub ecn_k: Option<usize>,
}

impl PipeConfig {
    /// A clean pipe of `delay`.
    pub fn delay(delay: Duration) -> Self {
        PipeConfig {
            delay,
            rate: None,
            queue: usize::MAX,
            loss: 0.0,
            reorder: 0.0,
            reorder_delay: Duration::ZERO,
            duplicate: 0.0,
            ecn_k: None,
        }
    }
}

struct Pipe {
    cfg: PipeConfig,
    rng: Rng,
    /// Departure times of segments at the bottleneck, oldest first.
    departures: VecDeque<Instant>,
    drops: u64,
}

impl Pipe {
    /// Arrival times of a segment of `wire` bytes sent at `now` (none if dropped), and whether
    /// the queue marked it.
    fn send(&mut self, now: Instant, wire: u64) -> (Vec<Instant>, bool) {
        if self.rng.chance(self.cfg.loss) {
            return (vec![], false);
        }
        let mut leave = now;
        let mut ce = false;
        if let Some(rate) = self.cfg.rate {
            while self.departures.front().is_some_and(|&t| t <= now) {
                self.departures.pop_front();
            }
            if self.departures.len() >= self.cfg.queue {
                self.drops += 1;
                return (vec![], false);
            }
            ce = self.cfg.ecn_k.is_some_and(|k| self.departures.len() >= k);
            let start = self.departures.back().copied().unwrap_or(now).max(now);
            leave = start + rate.time_to_send(Size(wire));
            self.departures.push_back(leave);
        }
        let mut out = vec![leave + self.cfg.delay];
        if self.rng.chance(self.cfg.reorder) {
            out[0] += self.cfg.reorder_delay;
        }
        if self.rng.chance(self.cfg.duplicate) {
            out.push(out[0] + Duration(1));
        }
        (out, ce)
    }
}

/// Which way a segment travels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Dir {
    AtoB,
    BtoA,
}

/// Decides which segments a test drops on purpose.
pub type DropFilter = Box<dyn FnMut(Dir, &Segment) -> bool>;

/// How long a test holds a segment sent at the given instant beyond its pipe's delay (a queue
/// elsewhere on the path); holding every segment of a direction until one instant keeps
/// their order.
pub type HoldFilter = Box<dyn FnMut(Dir, &Segment, Instant) -> Duration>;

/// A segment on its way: its direction, the segment, what it carries, and whether a queue
/// marked it Congestion Experienced.
type InFlight<P> = (Dir, Segment, P, bool);

/// Two endpoints and the pipes between them.
pub struct Sim<A: Endpoint, B: Endpoint<Payload = A::Payload>> {
    pub a: A,
    pub b: B,
    pub now: Instant,
    pipes: [Pipe; 2],
    in_flight: BTreeMap<(Instant, u64), InFlight<A::Payload>>,
    counter: u64,
    /// Segments that `drop_if` returns true for never arrive.
    pub drop_if: DropFilter,
    /// Segments are held this much longer on their way.
    pub hold_if: HoldFilter,
    /// Every segment put on the wire, with its time and direction.
    pub trace: Vec<(Instant, Dir, Segment)>,
    /// The application is also called at every multiple of this, so it can act at set times.
    pub app_tick: Duration,
}

impl<A: Endpoint, B: Endpoint<Payload = A::Payload>> Sim<A, B> {
    /// `a` and `b` joined by `ab` and `ba`, random streams from `seed`.
    pub fn new(a: A, b: B, ab: PipeConfig, ba: PipeConfig, seed: u64) -> Self {
        let pipe = |cfg, stream| Pipe {
            cfg,
            rng: Rng::for_stream(seed, stream),
            departures: VecDeque::new(),
            drops: 0,
        };
        Sim {
            a,
            b,
            now: Instant::ZERO,
            pipes: [pipe(ab, 1), pipe(ba, 2)],
            in_flight: BTreeMap::new(),
            counter: 0,
            drop_if: Box::new(|_, _| false),
            hold_if: Box::new(|_, _, _| Duration::ZERO),
            trace: Vec::new(),
            app_tick: Duration::from_millis(1),
        }
    }

    /// Segments dropped by the bottleneck queue of direction `d`.
    pub fn queue_drops(&self, d: Dir) -> u64 {
        self.pipes[d as usize].drops
    }

    /// Runs until `end`, calling `app` after every event and every `app_tick` so a test can
    /// write, read and close.
    pub fn run_until(&mut self, end: Instant, mut app: impl FnMut(&mut Self)) {
        loop {
            app(self);
            self.transmit();
            let tick = self.app_tick.as_nanos().max(1);
            let next = [
                self.in_flight.keys().next().map(|k| k.0),
                self.a.timeout(),
                self.b.timeout(),
                Some(Instant((self.now.as_nanos() / tick + 1) * tick)),
            ]
            .into_iter()
            .flatten()
            .min();
            let Some(t) = next.filter(|&t| t <= end) else {
                self.now = self.now.max(end);
                return;
            };
            // One event per step, then output: a receiver acknowledges each segment as a real
            // stack does (segments handled together would be acknowledged together).
            self.now = self.now.max(t);
            if let Some(entry) = self.in_flight.first_entry()
                && entry.key().0 <= self.now
            {
                let (dir, seg, p, ce) = entry.remove();
                match dir {
                    Dir::AtoB => self.b.handle(self.now, &seg, &p, ce),
                    Dir::BtoA => self.a.handle(self.now, &seg, &p, ce),
                }
            } else if self.a.timeout().is_some_and(|t| t <= self.now) {
                self.a.on_timeout(self.now);
            } else if self.b.timeout().is_some_and(|t| t <= self.now) {
                self.b.on_timeout(self.now);
            }
        }
    }

    fn transmit(&mut self) {
        let now = self.now;
        loop {
            let out = match self.a.poll(now) {
                Some((s, p)) => Some((Dir::AtoB, s, p)),
                None => self.b.poll(now).map(|(s, p)| (Dir::BtoA, s, p)),
            };
            let Some((dir, seg, p)) = out else { return };
            self.trace.push((now, dir, seg));
            if (self.drop_if)(dir, &seg) {
                continue;
            }
            let wire = 40 + u64::from(seg.len);
            let hold = (self.hold_if)(dir, &seg, now);
            let (arrivals, ce) = self.pipes[dir as usize].send(now, wire);
            let ce = ce && seg.len > 0;
            for at in arrivals {
                self.counter += 1;
                self.in_flight
                    .insert((at + hold, self.counter), (dir, seg, p.clone(), ce));
            }
        }
    }
}
