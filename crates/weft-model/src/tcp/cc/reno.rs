//! Reno's window rules (RFC 5681): slow start below the threshold, one segment per round trip
//! above it, half the flight on loss.

use super::{CongestionControl, Window, slow_start_increase};
use crate::time::{Duration, Instant};

/// Reno (and NewReno) congestion control.
#[derive(Clone, Debug, Default)]
pub struct Reno {
    byte_counting: bool,
    /// Bytes acknowledged in congestion avoidance since the window last grew (byte counting).
    acked_in_avoidance: u64,
}

impl Reno {
    /// With `byte_counting`, congestion avoidance adds one segment per window of acknowledged
    /// bytes (RFC 5681 section 3.1's recommended form, RFC 3465) and slow start counts bytes;
    /// without, each ACK adds MSS*MSS/cwnd (4.4BSD), so delayed ACKs halve the growth.
    pub fn new(byte_counting: bool) -> Self {
        Reno {
            byte_counting,
            acked_in_avoidance: 0,
        }
    }
}

impl CongestionControl for Reno {
    #[inline]
    fn on_ack(&mut self, w: &mut Window, _now: Instant, acked: u64, _srtt: Option<Duration>) {
        if w.in_slow_start() {
            w.cwnd += slow_start_increase(w, acked, self.byte_counting);
            return;
        }
        if self.byte_counting {
            self.acked_in_avoidance += acked;
            if self.acked_in_avoidance >= w.cwnd {
                self.acked_in_avoidance -= w.cwnd;
                w.cwnd += w.mss;
            }
        } else {
            w.cwnd += (w.mss * w.mss / w.cwnd).max(1);
        }
    }

    fn on_loss(&mut self, w: &mut Window, _now: Instant, flight: u64) {
        // RFC 5681 equation (4).
        w.ssthresh = (flight / 2).max(2 * w.mss);
        self.acked_in_avoidance = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_start_then_avoidance_then_halving() {
        let mut r = Reno::new(false);
        let mut w = Window {
            cwnd: 1000,
            ssthresh: 4000,
            mss: 1000,
        };
        let t = Instant::ZERO;
        for _ in 0..3 {
            r.on_ack(&mut w, t, 1000, None);
        }
        assert_eq!(w.cwnd, 4000);
        r.on_ack(&mut w, t, 1000, None);
        assert_eq!(w.cwnd, 4250, "MSS*MSS/cwnd above the threshold");
        r.on_loss(&mut w, t, 8000);
        assert_eq!(w.ssthresh, 4000);
        r.on_timeout(&mut w, t, 1000);
        assert_eq!(
            (w.ssthresh, w.cwnd),
            (2000, 1000),
            "at least two segments; one after RTO"
        );
    }

    #[test]
    fn byte_counting_adds_one_segment_per_window() {
        let mut r = Reno::new(true);
        let mut w = Window {
            cwnd: 10_000,
            ssthresh: 5_000,
            mss: 1000,
        };
        // Ten ACKs of 1000 bytes (one window) add exactly one segment.
        for _ in 0..10 {
            r.on_ack(&mut w, Instant::ZERO, 1000, None);
        }
        assert_eq!(w.cwnd, 11_000);
        // In slow start an ACK of two segments adds two (L = 2), of five still two.
        w.ssthresh = 100_000;
        r.on_ack(&mut w, Instant::ZERO, 2000, None);
        r.on_ack(&mut w, Instant::ZERO, 5000, None);
        assert_eq!(w.cwnd, 15_000);
    }
}
