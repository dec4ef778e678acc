//! Pacing and rate control for the sender.
//!
//! [`Pacer`] spaces datagrams at the current rate, allowing a short burst of credit so a driver
//! that wakes late can catch up with one batched send. [`RateControl`] sets the rate: fixed, or
//! adaptive from the receiver's per-round reports.
//!
//! # The adaptive controller
//! It paces at an estimate of the path's delivery rate, measured by the receiver (the rate at
//! which a buffer's first blast arrived, as RBUDP, Tsunami and UDT use the receiver's view), in
//! the manner of BBR rather than of loss-driven AIMD:
//! - **Startup**: the rate doubles per report while data arrives about as fast as it was sent
//!   and loss stays under the threshold. The first report that shows a bottleneck (arrival
//!   markedly slower than sending, loss above the threshold, or receiver overrun) ends startup:
//!   the rate becomes the measured arrival rate.
//! - **Cruise**: the estimate is the largest arrival rate of the last eight reports; the rate is
//!   the estimate, raised by 1/8 one report in eight to probe for more (the probe's own losses are
//!   expected and not taken as congestion).
//! - **Random loss is not congestion**: loss below the threshold (default 2%) changes nothing;
//!   the estimate comes from arrival rates, which random loss barely moves. Loss above the
//!   threshold (a queue overflowing, or a competing flow) lowers the estimate to 15/16 of the
//!   smaller of it and the arrival rate, once per congestion event (reports on rounds begun
//!   before the decrease are stale).
//! - **Receiver overrun is not network loss**: the receiver reports separately the datagrams its
//!   own sockets dropped (full kernel queues). Those are subtracted from the loss, and instead of
//!   backing off as for congestion the rate is capped at the receiver's drain rate (flow control,
//!   as UDT's receiver window does).
//!
//! **Fairness**: it is fair to flows of its own kind that see the same delivery rate (they
//! converge on shares of the bottleneck's delivery rate, as BBR flows do, not exactly equal). It
//! is NOT TCP-friendly: it ignores loss under the threshold and does not halve on loss, so
//! against loss-based TCP (cubic, reno) on a shared bottleneck it takes more than half.

use weft_model::{Duration, Instant, Rate, Size};

/// How the sender chooses its rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateMode {
    /// No pacing at all: blast as fast as the driver can send (SBTP and MBTP as published).
    Unlimited,
    /// A fixed rate.
    Fixed(Rate),
    /// Adaptive between bounds, from loss and arrival-rate feedback.
    Adaptive {
        /// Starting rate.
        initial: Rate,
        /// Lower bound.
        min: Rate,
        /// Upper bound.
        max: Rate,
        /// Loss fraction of a round above which it counts as congestion (e.g. 0.05).
        loss_threshold_ppm: u32,
    },
}

/// Spaces datagrams at a rate, with a burst allowance.
#[derive(Debug, Clone)]
pub struct Pacer {
    next: Instant,
    burst: Duration,
}

impl Pacer {
    /// A pacer that lets the sender catch up by at most `burst` when it wakes late.
    pub fn new(burst: Duration) -> Self {
        Pacer {
            next: Instant::ZERO,
            burst,
        }
    }

    /// The earliest instant the next datagram may leave.
    pub fn next_send(&self) -> Instant {
        self.next
    }

    /// Whether a datagram may leave at `now` (always, without a rate).
    pub fn ready(&self, now: Instant, rate: Option<Rate>) -> bool {
        rate.is_none() || self.next <= now
    }

    /// Accounts for `wire_bytes` leaving at `now` at `rate`.
    pub fn on_send(&mut self, now: Instant, wire_bytes: usize, rate: Option<Rate>) {
        let Some(rate) = rate else { return };
        let floor = Instant(now.as_nanos().saturating_sub(self.burst.as_nanos()));
        let base = self.next.max(floor);
        self.next = base + rate.time_to_send(Size(wire_bytes as u64));
    }

    /// Forgets accumulated credit: the next datagram may leave at `now`, not earlier.
    pub fn restart(&mut self, now: Instant) {
        if self.next < now {
            self.next = now;
        }
    }
}

/// A receiver's report on one round (a buffer's first blast), as the sender sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Report {
    /// When the report arrived.
    pub now: Instant,
    /// When the round's first datagram left.
    pub round_start: Instant,
    /// Datagrams sent in the round.
    pub sent: u32,
    /// Datagrams missing at the round's end (network loss and receiver drops together).
    pub lost: u32,
    /// Datagrams the receiver's own sockets dropped (overrun) since its previous report.
    pub drops: u32,
    /// Rate the round arrived at, bits/s on the wire (0: unknown).
    pub rx_rate: u64,
    /// Rate the round was actually sent at, bits/s on the wire (0: unknown).
    pub tx_rate: u64,
}

/// Reports kept by the delivery-rate max filter, and the probing cycle length.
const FILTER: usize = 8;

/// The sender's rate: fixed or adaptive.
#[derive(Debug, Clone)]
pub struct RateControl {
    mode: RateMode,
    rate: u64,
    startup: bool,
    /// Delivery-rate estimate (bits/s) and the samples it is the maximum of.
    est: u64,
    samples: std::collections::VecDeque<u64>,
    cycle: usize,
    decreases: u64,
    overruns: u64,
    /// When the rate last went down: rounds that began before then were sent at the old rate
    /// and say nothing about the new one (one decrease per congestion event, as TCP does once
    /// per round trip).
    last_decrease: Option<Instant>,
    /// Reports taken into account.
    reports: u64,
}

impl RateControl {
    /// A controller in `mode`.
    pub fn new(mode: RateMode) -> Self {
        let rate = match mode {
            RateMode::Unlimited => 0,
            RateMode::Fixed(r) => r.as_bps(),
            RateMode::Adaptive { initial, .. } => initial.as_bps(),
        };
        RateControl {
            mode,
            rate,
            startup: true,
            est: 0,
            samples: std::collections::VecDeque::with_capacity(FILTER),
            cycle: 0,
            decreases: 0,
            overruns: 0,
            last_decrease: None,
            reports: 0,
        }
    }

    /// The current rate, or `None` for unlimited.
    pub fn rate(&self) -> Option<Rate> {
        match self.mode {
            RateMode::Unlimited => None,
            _ => Some(Rate(self.rate.max(1))),
        }
    }

    /// Whether the adaptive controller is still waiting for its first report: until then the
    /// sender keeps a single buffer in flight, so that a starting rate far above the path's
    /// costs one buffer of losses, not a window of them.
    pub fn probing(&self) -> bool {
        matches!(self.mode, RateMode::Adaptive { .. }) && self.reports == 0
    }

    /// How many times the adaptive controller has backed off for congestion.
    pub fn decreases(&self) -> u64 {
        self.decreases
    }

    /// How many times it capped the rate because the receiver could not keep up.
    pub fn overruns(&self) -> u64 {
        self.overruns
    }

    /// Takes a report into account. Rounds of fewer than 16 datagrams carry too little
    /// information, and rounds begun before the last decrease are stale.
    pub fn on_report(&mut self, r: &Report) {
        let RateMode::Adaptive {
            min,
            max,
            loss_threshold_ppm,
            ..
        } = self.mode
        else {
            return;
        };
        if r.sent < 16 || self.last_decrease.is_some_and(|t| r.round_start < t) {
            return;
        }
        self.reports += 1;
        let net_lost = r.lost.saturating_sub(r.drops);
        let loss_ppm = (net_lost as u64 * 1_000_000 / r.sent as u64) as u32;
        let congested = loss_ppm > loss_threshold_ppm;
        let overrun = r.drops > 0;
        // The delivery rate: measured by the receiver, else what got through of what was sent.
        let sample = if r.rx_rate > 0 {
            r.rx_rate
        } else {
            r.tx_rate / r.sent as u64 * (r.sent - r.lost.min(r.sent)) as u64
        };
        let slow_arrival = r.rx_rate > 0 && r.tx_rate > 0 && r.rx_rate < r.tx_rate / 10 * 9;
        // A round sent above the estimate was a probe: its losses are the probe's, expected.
        let probing = !self.startup && r.tx_rate > self.est / 100 * 104;
        if self.startup {
            if !(congested || overrun || slow_arrival) {
                self.rate = self.rate.saturating_mul(2);
            } else {
                self.startup = false;
                self.cut(r.now, sample.max(1), overrun);
            }
        } else if overrun || (congested && !probing) {
            // Receiver overrun: its drain rate is the limit (flow control). Congestion: back
            // off below what got through.
            let base = self.est.min(sample).max(1);
            self.cut(r.now, if overrun { base } else { base / 16 * 15 }, overrun);
        } else if slow_arrival && !probing && sample < self.est / 100 * 85 {
            // Arrival well below the estimate, without loss: the path or the receiver slowed.
            self.cut(r.now, sample, false);
        } else {
            if self.samples.len() == FILTER {
                self.samples.pop_front();
            }
            self.samples.push_back(sample);
            let found_more = probing && sample > self.est / 100 * 104;
            self.est = self.samples.iter().copied().max().unwrap_or(sample);
            // Keep probing while probes find more; else one probe per cycle.
            self.cycle = if found_more {
                0
            } else {
                (self.cycle + 1) % FILTER
            };
            self.rate = if self.cycle == 0 {
                self.est / 8 * 9
            } else {
                self.est
            };
        }
        self.rate = self.rate.clamp(min.as_bps().max(1), max.as_bps().max(1));
    }

    fn cut(&mut self, now: Instant, to: u64, overrun: bool) {
        self.samples.clear();
        self.samples.push_back(to);
        self.est = to;
        self.rate = to;
        self.cycle = 1;
        self.last_decrease = Some(now);
        if overrun {
            self.overruns += 1;
        } else {
            self.decreases += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pacer_spaces_at_rate_and_bounds_catch_up() {
        let mut p = Pacer::new(Duration::from_micros(10));
        let r = Some(Rate::mbps(8)); // one byte per microsecond
        assert!(p.ready(Instant(0), r));
        p.on_send(Instant(0), 1000, r);
        assert_eq!(p.next_send(), Instant(1_000_000));
        assert!(!p.ready(Instant(999_999), r));
        // Woken 5 ms late: credit is capped at the 10 us burst.
        p.on_send(Instant(6_000_000), 1000, r);
        assert_eq!(p.next_send(), Instant(5_990_000 + 1_000_000));
        assert!(p.ready(Instant(0), None));
    }

    fn rep(now: u64, start: u64, sent: u32, lost: u32, drops: u32, rx: u64, tx: u64) -> Report {
        Report {
            now: Instant(now),
            round_start: Instant(start),
            sent,
            lost,
            drops,
            rx_rate: rx,
            tx_rate: tx,
        }
    }

    #[test]
    fn adaptive_finds_the_bottleneck_ignores_random_loss_and_tells_overrun_from_congestion() {
        let mut c = RateControl::new(RateMode::Adaptive {
            initial: Rate::mbps(100),
            min: Rate::mbps(1),
            max: Rate::mbps(10_000),
            loss_threshold_ppm: 20_000,
        });
        assert!(c.probing());
        c.on_report(&rep(1, 0, 100, 0, 0, 100_000_000, 100_000_000));
        assert_eq!(c.rate(), Some(Rate::mbps(200)), "startup doubles");
        assert!(!c.probing());
        c.on_report(&rep(2, 1, 100, 1, 0, 198_000_000, 200_000_000));
        assert_eq!(c.rate(), Some(Rate::mbps(400)), "1% random loss");
        // A 150 Mbit/s bottleneck: data arrives slower than it left.
        c.on_report(&rep(3, 2, 100, 0, 0, 150_000_000, 400_000_000));
        assert_eq!(c.rate(), Some(Rate::mbps(150)));
        assert_eq!(c.decreases(), 1);
        c.on_report(&rep(4, 2, 100, 60, 0, 150_000_000, 400_000_000));
        assert_eq!(
            c.rate(),
            Some(Rate::mbps(150)),
            "a round begun before the decrease is stale"
        );
        // Cruise under 1% random loss: the estimate holds, one probe per cycle of 8.
        let mut probes = 0;
        for i in 0..16 {
            let tx = c.rate().unwrap().as_bps();
            c.on_report(&rep(10 + i, 5 + i, 100, 1, 0, tx.min(150_000_000), tx));
            let r = c.rate().unwrap().as_bps();
            assert!(r == 150_000_000 || r == 168_750_000, "{r}");
            probes += u32::from(r == 168_750_000);
        }
        assert_eq!(probes, 2);
        assert_eq!(
            c.decreases(),
            1,
            "random loss under the threshold is no congestion"
        );
        // Receiver overrun: its sockets dropped what is missing. Capped at its drain rate,
        // counted apart from congestion.
        c.on_report(&rep(100, 90, 100, 30, 30, 90_000_000, 150_000_000));
        assert_eq!(c.rate(), Some(Rate::mbps(90)));
        assert_eq!((c.decreases(), c.overruns()), (1, 1));
        // Network loss above the threshold: 15/16 of what got through.
        c.on_report(&rep(200, 150, 100, 10, 0, 80_000_000, 90_000_000));
        assert_eq!(c.rate(), Some(Rate(80_000_000 / 16 * 15)));
        assert_eq!(c.decreases(), 2);
        // Tiny rounds are ignored; fixed mode never moves.
        c.on_report(&rep(300, 300, 3, 3, 0, 0, 1));
        assert_eq!(c.decreases(), 2);
        let mut f = RateControl::new(RateMode::Fixed(Rate::mbps(5)));
        f.on_report(&rep(1, 0, 100, 100, 0, 1, 5_000_000));
        assert_eq!(f.rate(), Some(Rate::mbps(5)));
        assert_eq!(RateControl::new(RateMode::Unlimited).rate(), None);
    }
}
