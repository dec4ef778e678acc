//! Round-trip estimation and the retransmission timeout (RFC 6298), with the classic BSD timer
//! granularity as an option.
//!
//! With a granularity `G` (4.4BSD's slow timer: 500 ms) round-trip samples are counted in whole
//! ticks crossed, as BSD's `t_rtt` counter was, and a timeout fires on a tick boundary; without
//! one, samples and deadlines are exact to the nanosecond (a modern stack's high-resolution
//! timers).

use crate::time::{Duration, Instant};

/// The timer parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RtoConfig {
    /// Lower bound on the timeout (RFC 6298: 1 s; 4.4BSD: two 500 ms ticks; Linux: 200 ms).
    pub min: Duration,
    /// Upper bound on the timeout, backoff included (RFC 6298: at least 60 s; BSD: 64 s).
    pub max: Duration,
    /// Timeout before any sample (RFC 6298 (2011): 1 s; RFC 2988 and 4.4BSD: 3 s).
    pub initial: Duration,
    /// Clock granularity: `None` for exact timers, `Some(500 ms)` for 4.4BSD.
    pub granularity: Option<Duration>,
    /// Where the ticks fall: boundaries at `phase + k * granularity` (reduced modulo the
    /// granularity). Each host's slow timer ran from its own boot, so hosts sharing a link tick
    /// out of step; zero puts every boundary on a multiple of the granularity.
    pub phase: Duration,
}

impl RtoConfig {
    /// RFC 6298 with exact timers: 1 s minimum and initial, 60 s maximum.
    pub const RFC6298: RtoConfig = RtoConfig {
        min: Duration::from_secs(1),
        max: Duration::from_secs(60),
        initial: Duration::from_secs(1),
        granularity: None,
        phase: Duration::ZERO,
    };
    /// 4.4BSD: 500 ms ticks, 1 s minimum (two ticks), 64 s maximum, 3 s before any sample.
    pub const BSD: RtoConfig = RtoConfig {
        min: Duration::from_secs(1),
        max: Duration::from_secs(64),
        initial: Duration::from_secs(3),
        granularity: Some(Duration::from_millis(500)),
        phase: Duration::ZERO,
    };
    /// Linux: 200 ms minimum (TCP_RTO_MIN), 120 s maximum, 1 s initial, jiffy-fine timers.
    pub const LINUX: RtoConfig = RtoConfig {
        min: Duration::from_millis(200),
        max: Duration::from_secs(120),
        initial: Duration::from_secs(1),
        granularity: None,
        phase: Duration::ZERO,
    };
}

/// Smoothed round trip, its variation and the current timeout with its backoff.
#[derive(Clone, Debug)]
pub struct RttEstimator {
    cfg: RtoConfig,
    srtt: Option<Duration>,
    rttvar: Duration,
    /// The timeout before backoff.
    base: Duration,
    /// Number of doublings since the last valid sample.
    backoff: u32,
}

impl RttEstimator {
    /// An estimator with no samples yet: the timeout is `cfg.initial`.
    pub fn new(cfg: RtoConfig) -> Self {
        RttEstimator {
            cfg,
            srtt: None,
            rttvar: Duration::ZERO,
            base: cfg.initial.max(cfg.min).min(cfg.max),
            backoff: 0,
        }
    }

    /// Takes a sample of a segment sent at `sent` and acknowledged at `now` (never one that was
    /// retransmitted: Karn's rule is the caller's). RFC 6298 section 2 with alpha = 1/8,
    /// beta = 1/4, K = 4. Clears the backoff.
    pub fn sample(&mut self, sent: Instant, now: Instant) {
        let r = self.measure(sent, now);
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = Duration(r.0 / 2);
            }
            Some(srtt) => {
                let err = srtt.0.abs_diff(r.0);
                self.rttvar = Duration((3 * self.rttvar.0 + err) / 4);
                self.srtt = Some(Duration((7 * srtt.0 + r.0) / 8));
            }
        }
        let g = self.cfg.granularity.unwrap_or(Duration(1));
        let srtt = self.srtt.unwrap_or(r);
        self.base = (srtt + g.max(Duration(4 * self.rttvar.0)))
            .max(self.cfg.min)
            .min(self.cfg.max);
        self.backoff = 0;
    }

    /// The round trip as the clock sees it: exact, or whole ticks crossed (4.4BSD's `t_rtt - 1`).
    fn measure(&self, sent: Instant, now: Instant) -> Duration {
        let d = now.saturating_duration_since(sent);
        match self.cfg.granularity {
            None => d,
            Some(g) if g.0 > 0 => {
                let (now, sent) = (self.shifted(now, g), self.shifted(sent, g));
                Duration((now / g.0 - sent / g.0) * g.0)
            }
            Some(_) => d,
        }
    }

    /// Doubles the timeout (RFC 6298 5.5), up to the maximum.
    pub fn back_off(&mut self) {
        self.backoff = (self.backoff + 1).min(32);
    }

    /// The current timeout, backoff included.
    pub fn rto(&self) -> Duration {
        let shifted = self.base.0.saturating_mul(1u64 << self.backoff.min(40));
        Duration(shifted.min(self.cfg.max.0))
    }

    /// When a timer of the current timeout armed at `now` fires: `now + rto`, or with a
    /// granularity the tick boundary at which BSD's count-down of `ceil(rto / G)` ticks ends.
    pub fn deadline(&self, now: Instant) -> Instant {
        self.deadline_after(now, self.rto())
    }

    /// When a timer of `d` armed at `now` fires under this clock.
    pub fn deadline_after(&self, now: Instant, d: Duration) -> Instant {
        match self.cfg.granularity {
            Some(g) if g.0 > 0 => {
                let shift = g.0 - self.cfg.phase.0 % g.0;
                let ticks = self.shifted(now, g) / g.0 + d.0.div_ceil(g.0).max(1);
                Instant(ticks * g.0 - shift)
            }
            _ => now + d,
        }
    }

    /// `t` on a clock whose tick boundaries are the multiples of `g`: moved later by
    /// `g - phase` (so the first boundary, at `phase`, lands on `g`), never below zero.
    fn shifted(&self, t: Instant, g: Duration) -> u64 {
        t.0 + (g.0 - self.cfg.phase.0 % g.0)
    }

    /// The smoothed round trip, once there is a sample.
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }

    /// The round-trip variation.
    pub fn rttvar(&self) -> Duration {
        self.rttvar
    }

    /// Doublings applied since the last sample.
    pub fn backoff(&self) -> u32 {
        self.backoff
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn first_sample_and_smoothing_follow_rfc6298() {
        let mut e = RttEstimator::new(RtoConfig {
            min: ms(1),
            ..RtoConfig::RFC6298
        });
        assert_eq!(e.rto(), Duration::from_secs(1));
        e.sample(Instant(0), Instant(0) + ms(100));
        assert_eq!(e.srtt(), Some(ms(100)));
        assert_eq!(e.rttvar(), ms(50));
        assert_eq!(e.rto(), ms(300)); // 100 + 4 * 50
        e.sample(Instant(0), Instant(0) + ms(200));
        // rttvar = 3/4 * 50 + 1/4 * 100 = 62.5; srtt = 7/8 * 100 + 1/8 * 200 = 112.5
        assert_eq!(e.rttvar(), Duration(62_500_000));
        assert_eq!(e.srtt(), Some(Duration(112_500_000)));
        assert_eq!(e.rto(), Duration(362_500_000));
    }

    #[test]
    fn minimum_and_backoff() {
        let mut e = RttEstimator::new(RtoConfig::LINUX);
        e.sample(Instant(0), Instant(0) + ms(10));
        assert_eq!(
            e.rto(),
            ms(200),
            "10 ms + 4 * 5 ms is under the 200 ms minimum"
        );
        e.back_off();
        assert_eq!(e.rto(), ms(400));
        e.back_off();
        assert_eq!(e.rto(), ms(800));
        for _ in 0..20 {
            e.back_off();
        }
        assert_eq!(e.rto(), Duration::from_secs(120), "capped at the maximum");
        e.sample(Instant(0), Instant(0) + ms(10));
        assert_eq!(e.rto(), ms(200), "a new sample clears the backoff");
    }

    #[test]
    fn bsd_ticks_quantise_samples_and_deadlines() {
        let mut e = RttEstimator::new(RtoConfig::BSD);
        // A 17 ms round trip that crosses no tick boundary measures zero ticks...
        e.sample(Instant(0) + ms(100), Instant(0) + ms(117));
        assert_eq!(e.srtt(), Some(Duration::ZERO));
        // ... and the timeout is the 1 s minimum (two ticks).
        assert_eq!(e.rto(), ms(1000));
        // Armed at 1.2 s as two ticks, it fires at the second tick boundary after (1.5 s, then
        // 2.0 s): BSD's count-down fires up to a tick early, never late.
        assert_eq!(e.deadline(Instant(0) + ms(1200)), Instant(0) + ms(2000));
        // One that crosses a boundary measures a whole tick.
        let mut f = RttEstimator::new(RtoConfig::BSD);
        f.sample(Instant(0) + ms(490), Instant(0) + ms(510));
        assert_eq!(f.srtt(), Some(ms(500)));
    }

    #[test]
    fn bsd_ticks_follow_the_host_phase() {
        let bsd = RtoConfig {
            phase: ms(300),
            ..RtoConfig::BSD
        };
        // Boundaries at 0.3, 0.8, 1.3, 1.8, 2.3 s: two ticks armed at 1.2 s end at 1.8 s, not
        // at 2.0 s as on a host whose clock started at zero.
        let e = RttEstimator::new(bsd);
        let second = Duration::from_secs(1);
        assert_eq!(
            e.deadline_after(Instant(0) + ms(1200), second),
            Instant(0) + ms(1800)
        );
        // Before the first boundary: the count-down's ticks are 0.3 and 0.8 s.
        assert_eq!(
            e.deadline_after(Instant(0) + ms(100), second),
            Instant(0) + ms(800)
        );
        // 490 -> 510 ms crosses no boundary of this clock; 290 -> 310 ms crosses one.
        let mut f = RttEstimator::new(bsd);
        f.sample(Instant(0) + ms(490), Instant(0) + ms(510));
        assert_eq!(f.srtt(), Some(Duration::ZERO));
        let mut g = RttEstimator::new(bsd);
        g.sample(Instant(0) + ms(290), Instant(0) + ms(310));
        assert_eq!(g.srtt(), Some(ms(500)));
    }
}
