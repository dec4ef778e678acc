//! Pacing and rate control for the sender.
//!
//! [`Pacer`] spaces datagrams at the current rate, allowing a short burst of credit so a driver
//! that wakes late can catch up with one batched send. [`RateControl`] sets the rate: fixed, or
//! adaptive from the receiver's per-round reports.
//!
//! The adaptive controller is AIMD on two signals: the loss fraction of a round and the
//! receiver-measured arrival rate of that round (packet dispersion, as RBUDP, Tsunami and UDT use
//! the receiver's view). A round counts as congested when its loss exceeds the threshold or data
//! arrived markedly slower than it was sent (a queue was building). Before the first congestion
//! it grows by half per report (slow start); after, by a step of 1/16 of the rate at the last
//! decrease, and on congestion it drops to 15/16 of the smaller of its rate and the arrival rate.
//! Fairness: flows of this controller sharing a bottleneck converge towards equal shares (additive
//! increase, multiplicative decrease); it is NOT TCP-friendly: it ignores random loss below the
//! threshold and backs off by 1/16 instead of 1/2, so it takes more than its share against TCP.

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

/// The sender's rate: fixed or adaptive.
#[derive(Debug, Clone)]
pub struct RateControl {
    mode: RateMode,
    rate: u64,
    slow_start: bool,
    step: u64,
    decreases: u64,
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
            slow_start: true,
            step: (rate / 16).max(1_000_000),
            decreases: 0,
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

    /// How many times the adaptive controller has backed off.
    pub fn decreases(&self) -> u64 {
        self.decreases
    }

    /// A report at `now` on a round that began at `round_start`: `sent` datagrams, sent at
    /// `tx_rate` bits/s, of which `lost` were missing, arriving at `rx_rate` (bits/s, 0 if
    /// unknown). Rounds of fewer than 16 datagrams carry too little information, and rounds begun
    /// before the last decrease are stale.
    pub fn on_report(
        &mut self,
        now: Instant,
        round_start: Instant,
        sent: u32,
        lost: u32,
        rx_rate: u64,
        tx_rate: u64,
    ) {
        let RateMode::Adaptive {
            min,
            max,
            loss_threshold_ppm,
            ..
        } = self.mode
        else {
            return;
        };
        if sent < 16 || self.last_decrease.is_some_and(|t| round_start < t) {
            return;
        }
        self.reports += 1;
        let loss_ppm = (lost as u64 * 1_000_000 / sent as u64) as u32;
        // Both rates span the same datagrams; a receiver seeing them markedly slower than they
        // left means a queue grew on the way (or at the receiver).
        let slow_arrival = rx_rate > 0 && tx_rate > 0 && rx_rate < tx_rate / 100 * 85;
        if loss_ppm > loss_threshold_ppm || slow_arrival {
            let base = if rx_rate > 0 {
                self.rate.min(rx_rate)
            } else {
                self.rate
            };
            self.rate = base / 16 * 15;
            self.slow_start = false;
            self.step = (self.rate / 16).max(1_000_000);
            self.decreases += 1;
            self.last_decrease = Some(now);
        } else if self.slow_start {
            self.rate = self.rate / 2 * 3;
        } else {
            self.rate += self.step;
        }
        self.rate = self.rate.clamp(min.as_bps().max(1), max.as_bps().max(1));
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

    #[test]
    fn adaptive_backs_off_on_loss_and_slow_arrival_then_grows() {
        let mut c = RateControl::new(RateMode::Adaptive {
            initial: Rate::mbps(100),
            min: Rate::mbps(1),
            max: Rate::mbps(1000),
            loss_threshold_ppm: 50_000,
        });
        c.on_report(Instant(1), Instant(0), 100, 0, 0, 100_000_000);
        assert_eq!(c.rate(), Some(Rate::mbps(150)));
        c.on_report(Instant(2), Instant(1), 100, 10, 0, 150_000_000);
        assert_eq!(c.rate(), Some(Rate(150_000_000 / 16 * 15)));
        let r = c.rate().unwrap().as_bps();
        c.on_report(Instant(3), Instant(1), 100, 90, r, r);
        assert_eq!(
            c.rate().unwrap().as_bps(),
            r,
            "a round begun before the decrease is stale"
        );
        c.on_report(Instant(4), Instant(2), 100, 1, r, r);
        assert!(
            c.rate().unwrap().as_bps() > r,
            "random 1% loss is not congestion"
        );
        c.on_report(Instant(5), Instant(4), 100, 0, 50_000_000, 50_000_000);
        assert!(
            c.rate().unwrap().as_bps() > 50_000_000,
            "arrival at the rate sent is no congestion"
        );
        let r = c.rate().unwrap().as_bps();
        c.on_report(Instant(6), Instant(5), 100, 0, 50_000_000, r);
        assert_eq!(c.rate(), Some(Rate(50_000_000 / 16 * 15)));
        assert_eq!(c.decreases(), 2);
        // Tiny rounds are ignored; fixed mode never moves.
        c.on_report(Instant(7), Instant(7), 3, 3, 0, 1);
        assert_eq!(c.decreases(), 2);
        let mut f = RateControl::new(RateMode::Fixed(Rate::mbps(5)));
        f.on_report(Instant(1), Instant(0), 100, 100, 1, 5_000_000);
        assert_eq!(f.rate(), Some(Rate::mbps(5)));
        assert_eq!(RateControl::new(RateMode::Unlimited).rate(), None);
    }
}
