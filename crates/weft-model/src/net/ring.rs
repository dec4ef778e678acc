//! A shared FDDI ring: stations that take turns on one medium by passing a token, under the
//! timed-token rules of ANSI X3.139 (asynchronous traffic only), sans-IO with explicit time.
//!
//! Each station measures the token's rotation (TRT, the time since the token last reached it).
//! A token that arrives early (TRT under the target rotation time, TTRT) may be held for the
//! rest of the target (THT = TTRT - TRT): the station starts frames from its queue while THT
//! has not run out (the last may overrun it), then issues a new token. A late token (TRT at or
//! over TTRT) may not be used; the station only repeats it. The token takes one station's
//! latency and its share of the fibre to reach the next station, so an idle ring's rotation is
//! its latency D. A frame occupies the whole ring for its time on the line: only the token's
//! holder sends. Frames reach their destination after the hops between the two stations.
//!
//! Call order: [`TokenRing::handle_frame`] for each frame a station queues,
//! [`TokenRing::handle_timeout`] at [`TokenRing::poll_timeout`], then
//! [`TokenRing::poll_delivered`] until it gives nothing.

use std::collections::{BTreeMap, VecDeque};

use serde::{Deserialize, Serialize};

use crate::time::{Duration, Instant};
use crate::units::{Rate, Size};

/// Bytes of an FDDI token on the line: preamble 8 (16 idle symbols), SD, FC and ED (ANSI X3.139).
pub const FDDI_TOKEN_BYTES: u64 = 11;
/// Propagation in fibre, ns per km (Jain's figure for FDDI rings: light at about c / 1.47).
pub const FIBRE_NS_PER_KM: f64 = 5085.0;

/// A ring's size and timing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RingSpec {
    /// Stations on the ring, each a MAC that repeats what passes it (at least 1).
    pub stations: u32,
    /// Data rate on the ring (FDDI: 100 Mbit/s, 4B/5B at 125 Mbaud).
    pub rate: Rate,
    /// Latency each station adds as it repeats the signal.
    pub station_delay: Duration,
    /// Propagation around the whole ring's fibre.
    pub fibre: Duration,
    /// Target token rotation time negotiated on the ring.
    pub ttrt: Duration,
    /// Bytes of a token on the line.
    pub token_bytes: u64,
}

impl RingSpec {
    /// An FDDI ring of `stations` stations and `fibre_km` of fibre, each station adding
    /// `station_delay`, with target rotation `ttrt`.
    pub fn fddi(stations: u32, fibre_km: f64, station_delay: Duration, ttrt: Duration) -> Self {
        RingSpec {
            stations: stations.max(1),
            rate: Rate::mbps(100),
            station_delay,
            fibre: Duration((fibre_km.max(0.0) * FIBRE_NS_PER_KM).round() as u64),
            ttrt,
            token_bytes: FDDI_TOKEN_BYTES,
        }
    }

    /// The ring's latency D: a bit's time around the idle ring, ns.
    pub fn latency(&self) -> u64 {
        u64::from(self.stations) * self.station_delay.as_nanos() + self.fibre.as_nanos()
    }

    /// Time from one station to the next, ns (the latency shared evenly among the stations).
    pub fn hop(&self) -> u64 {
        (self.latency() / u64::from(self.stations)).max(1)
    }

    /// Time `bytes` occupy the line, ns.
    pub fn line_time(&self, bytes: u64) -> u64 {
        self.rate.time_to_send(Size(bytes)).as_nanos()
    }
}

/// Counters of a ring.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RingStats {
    /// Frames sent.
    pub frames: u64,
    /// Time frames occupied the line, ns.
    pub busy_ns: u64,
    /// Tokens a station held (to send at least one frame).
    pub captures: u64,
    /// Tokens that arrived late at a station with frames to send.
    pub late: u64,
}

/// Where the token is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token {
    /// On its way: it reaches station `at` at `t`.
    Arriving { at: u32, t: u64 },
    /// Held by `at`, whose line is free at `free`; it may start frames until `until`.
    Holding { at: u32, free: u64, until: u64 },
    /// Circulating on an idle ring: it reached `at` at `t` and goes round every latency.
    Idle { at: u32, t: u64 },
}

/// A frame on the ring: its destination station, its bytes on the line and what it carries.
#[derive(Clone, Debug)]
struct Queued<F> {
    to: u32,
    bytes: u64,
    frame: F,
}

/// A timed-token ring.
#[derive(Debug)]
pub struct TokenRing<F> {
    spec: RingSpec,
    queues: Vec<VecDeque<Queued<F>>>,
    /// When the token last reached each station, as its TRT counts from, ns.
    last: Vec<u64>,
    token: Token,
    /// Frames on their way to their destination, by arrival instant and order sent.
    delivering: BTreeMap<(u64, u64), (u32, F)>,
    sent: u64,
    /// Counters.
    pub stats: RingStats,
}

impl<F> TokenRing<F> {
    /// An idle ring at time 0, its token just past station 0.
    pub fn new(spec: RingSpec) -> Self {
        let n = spec.stations.max(1) as usize;
        TokenRing {
            queues: (0..n).map(|_| VecDeque::new()).collect(),
            last: vec![0; n],
            token: Token::Idle { at: 0, t: 0 },
            delivering: BTreeMap::new(),
            sent: 0,
            stats: RingStats::default(),
            spec,
        }
    }

    /// The ring's description.
    pub fn spec(&self) -> &RingSpec {
        &self.spec
    }

    /// Frames waiting at `station`.
    pub fn queued(&self, station: u32) -> usize {
        self.queues.get(station as usize).map_or(0, VecDeque::len)
    }

    /// Station `station` queues `frame` of `bytes` on the line for station `to` at `now`.
    /// Frames for a station that does not exist are dropped.
    pub fn handle_frame(&mut self, now: Instant, station: u32, to: u32, bytes: u64, frame: F) {
        let n = self.spec.stations;
        if station >= n || to >= n {
            return;
        }
        self.queues[station as usize].push_back(Queued { to, bytes, frame });
        if let Token::Idle { at, t } = self.token {
            self.wake(now.as_nanos(), at, t);
        }
    }

    /// The next instant something happens without new input.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let token = match self.token {
            Token::Arriving { t, .. } => Some(t),
            Token::Holding { free, .. } => Some(free),
            Token::Idle { .. } => None,
        };
        let delivery = self.delivering.keys().next().map(|&(t, _)| t);
        match (token, delivery) {
            (Some(a), Some(b)) => Some(Instant(a.min(b))),
            (a, b) => a.or(b).map(Instant),
        }
    }

    /// Moves the token on as far as `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        let now = now.as_nanos();
        loop {
            match self.token {
                Token::Arriving { at, t } if t <= now => self.arrive(at, t),
                Token::Holding { at, free, until } if free <= now => self.hold(at, free, until),
                _ => return,
            }
        }
    }

    /// A frame that has reached its destination by `now`: the station, the instant it arrived
    /// whole and the frame.
    pub fn poll_delivered(&mut self, now: Instant) -> Option<(u32, Instant, F)> {
        let (&(t, seq), _) = self.delivering.iter().next()?;
        if t > now.as_nanos() {
            return None;
        }
        let (to, frame) = self.delivering.remove(&(t, seq))?;
        Some((to, Instant(t), frame))
    }

    /// The idle ring's token, which reached `at` at `t`, set moving at `now`: each station's
    /// TRT restarts from the token's last pass, and the token goes on from where it is.
    fn wake(&mut self, now: u64, at: u32, t: u64) {
        let n = u64::from(self.spec.stations);
        let hop = self.spec.hop();
        let rotation = n * hop;
        for (k, last) in self.last.iter_mut().enumerate() {
            let first = t + ((k as u64 + n - u64::from(at)) % n) * hop;
            if first <= now {
                *last = (*last).max(first + (now - first) / rotation * rotation);
            }
        }
        // The next station the token reaches at or after `now`.
        let passed = now.saturating_sub(t) / hop;
        let next = ((u64::from(at) + passed + 1) % n) as u32;
        self.token = Token::Arriving {
            at: next,
            t: t + (passed + 1) * hop,
        };
    }

    /// The token reaches `at` at `t`: used if early and the station has frames, else repeated.
    fn arrive(&mut self, at: u32, t: u64) {
        let i = at as usize;
        let trt = t.saturating_sub(self.last[i]);
        let ttrt = self.spec.ttrt.as_nanos().max(1);
        let early = trt < ttrt;
        if early {
            self.last[i] = t;
        } else {
            // Late: TRT restarted each time it expired and is not reset now.
            self.last[i] += trt / ttrt * ttrt;
        }
        if self.queues[i].is_empty() || !early {
            if !self.queues[i].is_empty() {
                self.stats.late += 1;
            }
            self.pass_on(at, t);
            return;
        }
        self.stats.captures += 1;
        self.token = Token::Holding {
            at,
            free: t,
            until: t + (ttrt - trt),
        };
    }

    /// Station `at` holds the token and its line is free at `free`: it starts its next frame
    /// if THT has not run out, else issues a new token.
    fn hold(&mut self, at: u32, free: u64, until: u64) {
        let i = at as usize;
        let front = if free < until {
            self.queues[i].pop_front()
        } else {
            None
        };
        let Some(q) = front else {
            let issued = free + self.spec.line_time(self.spec.token_bytes);
            self.pass_on(at, issued);
            return;
        };
        let time = self.spec.line_time(q.bytes);
        let end = free + time;
        self.stats.frames += 1;
        self.stats.busy_ns += time;
        let n = self.spec.stations;
        let hops = u64::from((q.to + n - at) % n);
        self.sent += 1;
        self.delivering
            .insert((end + hops * self.spec.hop(), self.sent), (q.to, q.frame));
        self.token = Token::Holding {
            at,
            free: end,
            until,
        };
    }

    /// The token leaves `at` at `t` for the next station; an empty ring goes idle.
    fn pass_on(&mut self, at: u32, t: u64) {
        if self.queues.iter().all(VecDeque::is_empty) {
            self.token = Token::Idle { at, t };
            return;
        }
        self.token = Token::Arriving {
            at: (at + 1) % self.spec.stations,
            t: t + self.spec.hop(),
        };
    }
}

/// The share of a saturated ring's time that carries frames when `active` stations always have
/// frames (Jain, "Performance analysis of FDDI token ring networks", 1990): each rotation
/// the stations together send for `active * (T - D)` out of `active * T + D`, with `T` the
/// target rotation time and `D` the ring's latency; frames are taken as short beside `T`.
pub fn saturated_efficiency(spec: &RingSpec, active: u32) -> f64 {
    let n = f64::from(active.max(1));
    let t = spec.ttrt.as_nanos() as f64;
    let d = spec.latency() as f64;
    if t <= d {
        return 0.0;
    }
    n * (t - d) / (n * t + d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(stations: u32, ttrt_us: u64) -> RingSpec {
        RingSpec::fddi(
            stations,
            0.0,
            Duration::from_micros(1),
            Duration::from_micros(ttrt_us),
        )
    }

    /// Runs `ring` until `end` with stations `senders` always holding frames of `bytes` for
    /// station `to`; the frames delivered from each station.
    fn saturate(
        ring: &mut TokenRing<u32>,
        senders: &[u32],
        to: u32,
        bytes: u64,
        end: u64,
    ) -> Vec<u64> {
        let mut got = vec![0; ring.spec().stations as usize];
        let mut now = 0;
        loop {
            for &s in senders {
                while ring.queued(s) < 2 {
                    ring.handle_frame(Instant(now), s, to, bytes, s);
                }
            }
            ring.handle_timeout(Instant(now));
            while let Some((_, _, from)) = ring.poll_delivered(Instant(now)) {
                got[from as usize] += 1;
            }
            match ring.poll_timeout() {
                Some(t) if t.0 <= end => now = t.0.max(now),
                _ => return got,
            }
        }
    }

    #[test]
    fn a_frame_on_an_idle_ring_waits_for_the_token_then_crosses_the_hops() {
        // Four stations 1 us apart; the token was at station 0 at time 0 and is at 2 at 2 us.
        let mut ring = TokenRing::new(spec(4, 8000));
        ring.handle_frame(Instant(2_000), 3, 1, 1000, 7u32);
        // Reaches station 3 at 3 us; 1000 bytes take 80 us; two hops on to station 1.
        let mut got = None;
        while let Some(now) = ring.poll_timeout() {
            ring.handle_timeout(now);
            if let Some(d) = ring.poll_delivered(now) {
                got = Some(d);
                break;
            }
        }
        assert_eq!(got, Some((1, Instant(85_000), 7)));
        assert_eq!(ring.stats.captures, 1);
    }

    #[test]
    fn two_senders_take_turns_and_share_the_ring_evenly() {
        let mut ring = TokenRing::new(spec(4, 8000));
        let got = saturate(&mut ring, &[0, 2], 1, 4388, 1_000_000_000);
        // Two stations sending: each gets half the frames, within one token's worth.
        let (a, b) = (got[0] as f64, got[2] as f64);
        assert!(a > 1000.0, "{got:?}");
        assert!((a - b).abs() <= 30.0);
        assert!(
            ring.stats.captures > 100,
            "the token went round {}",
            ring.stats.captures
        );
    }

    #[test]
    fn a_holder_stops_when_its_holding_time_runs_out() {
        // TTRT 1 ms: a station whose token came back early may send only for what is left of
        // the target, so two saturated stations settle at about T / 3 each a capture (Jain:
        // with n stations, (T - D) / (n + 1)), 333 us or 4.2 frames of 80 us, and the last
        // frame may overrun; not the whole queue, which the test keeps full.
        let mut ring = TokenRing::new(spec(2, 1000));
        let end = 100_000_000;
        saturate(&mut ring, &[0, 1], 0, 1000, end);
        let per_capture = ring.stats.frames as f64 / ring.stats.captures as f64;
        assert!(
            (4.0..=5.5).contains(&per_capture),
            "{per_capture} frames a capture"
        );
    }

    #[test]
    fn saturated_ring_efficiency_is_jains_within_a_frame_per_rotation() {
        // 20 stations and 4 km of fibre at 1 us a station: D = 40.34 us; TTRT 8 ms.
        let s = RingSpec::fddi(20, 4.0, Duration::from_micros(1), Duration::from_millis(8));
        assert_eq!(s.latency(), 40_340);
        let jain = saturated_efficiency(&s, 20);
        assert!((jain - 0.99471).abs() < 1e-5, "{jain}");
        let mut ring = TokenRing::new(s);
        let senders: Vec<u32> = (0..20).collect();
        let end = 2_000_000_000;
        saturate(&mut ring, &senders, 0, 4388, end);
        let sim = ring.stats.busy_ns as f64 / end as f64;
        assert!((sim - jain).abs() < 0.003, "sim {sim} against {jain}");
    }

    #[test]
    fn late_tokens_are_not_used() {
        // TTRT shorter than the time one frame takes: after a station's frame the token is late
        // everywhere else for a while, so captures are far fewer than token arrivals.
        let mut ring = TokenRing::new(spec(3, 100));
        saturate(&mut ring, &[0, 1, 2], 0, 4388, 50_000_000);
        // THT is under one frame's 351 us: one frame a capture.
        assert_eq!(ring.stats.frames, ring.stats.captures);
        assert!(
            ring.stats.late > ring.stats.captures / 2,
            "{:?}",
            ring.stats
        );
    }
}
