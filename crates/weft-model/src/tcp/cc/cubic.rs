//! CUBIC (RFC 9438): after a loss the window follows W(t) = C (t - K)^3 + W_max, concave up to
//! the window at the last loss and convex beyond it, never slower than Reno would be
//! (the "Reno-friendly" estimate W_est).

use super::{CongestionControl, Window, slow_start_increase};
use crate::time::{Duration, Instant};

/// CUBIC's C, segments per second cubed (RFC 9438 section 5).
pub const C: f64 = 0.4;
/// CUBIC's multiplicative decrease factor (RFC 9438 section 4.6).
pub const BETA: f64 = 0.7;

/// CUBIC congestion control.
#[derive(Clone, Debug)]
pub struct Cubic {
    byte_counting: bool,
    /// Window just before the last reduction, segments.
    w_max: f64,
    /// Time the window takes to climb back to `w_max`, seconds.
    k: f64,
    /// When the current congestion-avoidance epoch began.
    epoch_start: Option<Instant>,
    /// The Reno-friendly estimate, segments.
    w_est: f64,
    /// Fractional bytes of growth not yet added to the integer window.
    carry: f64,
}

impl Cubic {
    /// A controller with no loss yet (slow start until the first).
    pub fn new(byte_counting: bool) -> Self {
        Cubic {
            byte_counting,
            w_max: 0.0,
            k: 0.0,
            epoch_start: None,
            w_est: 0.0,
            carry: 0.0,
        }
    }

    /// W_cubic(t) of RFC 9438 equation (1) for the current epoch, segments, `t` seconds after
    /// the epoch began.
    pub fn w_cubic(&self, t: f64) -> f64 {
        C * (t - self.k).powi(3) + self.w_max
    }

    /// K of the current epoch, seconds.
    pub fn k(&self) -> f64 {
        self.k
    }

    /// W_max, segments.
    pub fn w_max(&self) -> f64 {
        self.w_max
    }

    /// Start of the current epoch, if one is running.
    pub fn epoch_start(&self) -> Option<Instant> {
        self.epoch_start
    }

    fn add_bytes(&mut self, w: &mut Window, bytes: f64) {
        let total = self.carry + bytes.max(0.0);
        let whole = total.floor();
        self.carry = total - whole;
        w.cwnd += whole as u64;
    }
}

impl CongestionControl for Cubic {
    fn on_ack(&mut self, w: &mut Window, now: Instant, acked: u64, srtt: Option<Duration>) {
        if w.in_slow_start() {
            w.cwnd += slow_start_increase(w, acked, self.byte_counting);
            return;
        }
        let mss = w.mss as f64;
        let cwnd = w.cwnd as f64 / mss;
        let start = *self.epoch_start.get_or_insert_with(|| {
            // RFC 9438 equation (2), with the window at the start of the epoch.
            if cwnd < self.w_max {
                self.k = ((self.w_max - cwnd) / C).cbrt();
            } else {
                self.k = 0.0;
                self.w_max = cwnd;
            }
            self.w_est = cwnd;
            now
        });
        let t = now.saturating_duration_since(start).as_secs_f64();
        let rtt = srtt.map_or(0.0, |d| d.as_secs_f64());
        let acked_segs = acked as f64 / mss;
        // Reno-friendly estimate (section 4.3): alpha_cubic per window until W_max, then 1.
        let alpha = if self.w_est >= self.w_max {
            1.0
        } else {
            3.0 * (1.0 - BETA) / (1.0 + BETA)
        };
        self.w_est += alpha * acked_segs / cwnd;
        if self.w_cubic(t) < self.w_est {
            // Reno-friendly region: follow the estimate.
            let target = self.w_est * mss;
            self.add_bytes(w, target - w.cwnd as f64);
        } else {
            // Concave or convex region (sections 4.4, 4.5): approach W_cubic one RTT ahead,
            // bounded to between the window and 1.5 times it.
            let target = self.w_cubic(t + rtt).clamp(cwnd, 1.5 * cwnd);
            self.add_bytes(w, (target - cwnd) / cwnd * acked as f64);
        }
    }

    fn on_loss(&mut self, w: &mut Window, _now: Instant, flight: u64) {
        let cwnd = w.cwnd as f64 / w.mss as f64;
        // Fast convergence (section 4.7): give up more room when losses come before W_max.
        self.w_max = if cwnd < self.w_max {
            cwnd * (1.0 + BETA) / 2.0
        } else {
            cwnd
        };
        self.epoch_start = None;
        self.carry = 0.0;
        w.ssthresh = ((flight.min(w.cwnd) as f64 * BETA) as u64).max(2 * w.mss);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decrease_is_beta_and_k_matches_the_formula() {
        let mut c = Cubic::new(false);
        let mut w = Window {
            cwnd: 100_000,
            ssthresh: 1,
            mss: 1000,
        };
        c.on_loss(&mut w, Instant::ZERO, 100_000);
        assert_eq!(w.ssthresh, 70_000);
        w.cwnd = w.ssthresh;
        c.on_ack(&mut w, Instant::ZERO, 1000, None);
        // K = cbrt(W_max (1 - beta) / C) = cbrt(100 * 0.3 / 0.4).
        assert!((c.k() - 75f64.cbrt()).abs() < 1e-9);
        assert!((c.w_cubic(0.0) - 70.0).abs() < 1e-9);
        assert!((c.w_cubic(c.k()) - 100.0).abs() < 1e-9);
    }

    #[test]
    fn fast_convergence_lowers_w_max() {
        let mut c = Cubic::new(false);
        let mut w = Window {
            cwnd: 100_000,
            ssthresh: 1,
            mss: 1000,
        };
        c.on_loss(&mut w, Instant::ZERO, 100_000);
        w.cwnd = 80_000;
        c.on_loss(&mut w, Instant::ZERO, 80_000);
        assert!((c.w_max() - 80.0 * 1.7 / 2.0).abs() < 1e-9);
    }
}
