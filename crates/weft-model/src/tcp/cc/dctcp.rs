//! DCTCP (RFC 8257): Reno's growth, and on congestion marks a cut in proportion to how much of
//! the last window was marked, where Reno halves.
//!
//! The sender keeps `alpha`, a moving average (gain `g`, 1/16) of the fraction of bytes whose
//! acknowledgements echoed a Congestion Experienced mark, updated once per window of data; on the
//! first echo of a window the window becomes `cwnd * (1 - alpha / 2)` (RFC 8257 section 3.3).
//! The connection does the echo and the once-per-window bookkeeping (`conn/ecn.rs`); this holds
//! the estimate and the cut.

use super::{CongestionControl, Reno, Window};
use crate::time::{Duration, Instant};

/// The estimation gain RFC 8257 recommends (and Linux's `dctcp_shift_g` = 4 gives).
pub const DEFAULT_GAIN: f64 = 1.0 / 16.0;

/// DCTCP's congestion controller.
#[derive(Clone, Debug)]
pub struct Dctcp {
    reno: Reno,
    /// Estimated fraction of marked bytes, 0..=1.
    alpha: f64,
    /// Gain of the moving average.
    gain: f64,
    /// Bytes acknowledged in the current observation window.
    acked: u64,
    /// Of those, bytes whose acknowledgement echoed a mark.
    marked: u64,
}

impl Dctcp {
    /// A controller with alpha at 1 (RFC 8257 section 3.3: a new flow assumes full congestion
    /// until it has measured), Reno's growth with or without byte counting.
    pub fn new(byte_counting: bool) -> Self {
        Dctcp {
            reno: Reno::new(byte_counting),
            alpha: 1.0,
            gain: DEFAULT_GAIN,
            acked: 0,
            marked: 0,
        }
    }

    /// The estimated fraction of marked bytes.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// `acked` bytes were acknowledged by an ACK that echoed a mark (`marked`) or did not.
    pub fn count(&mut self, acked: u64, marked: bool) {
        self.acked += acked;
        if marked {
            self.marked += acked;
        }
    }

    /// The observation window (one window of data) ended: fold its marked fraction into alpha
    /// and start another.
    pub fn end_window(&mut self) {
        if self.acked > 0 {
            let f = self.marked as f64 / self.acked as f64;
            self.alpha = (1.0 - self.gain) * self.alpha + self.gain * f;
        }
        self.acked = 0;
        self.marked = 0;
    }

    /// The response to the first mark of a window: the window shrinks by alpha / 2 (at least two
    /// segments remain) and becomes the slow-start threshold.
    pub fn on_mark(&mut self, w: &mut Window) {
        let cut = (w.cwnd as f64 * self.alpha / 2.0) as u64;
        w.cwnd = w.cwnd.saturating_sub(cut).max(2 * w.mss);
        w.ssthresh = w.cwnd;
    }
}

impl CongestionControl for Dctcp {
    #[inline]
    fn on_ack(&mut self, w: &mut Window, now: Instant, acked: u64, srtt: Option<Duration>) {
        self.reno.on_ack(w, now, acked, srtt);
    }

    fn on_loss(&mut self, w: &mut Window, now: Instant, flight: u64) {
        // RFC 8257 section 3.5: a loss is answered as Reno does.
        self.reno.on_loss(w, now, flight);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alpha_follows_the_marked_fraction_and_sets_the_cut() {
        let mut d = Dctcp::new(true);
        let mut w = Window {
            cwnd: 100_000,
            ssthresh: u64::MAX,
            mss: 1000,
        };
        // A fresh flow assumes alpha = 1: the first mark halves.
        d.on_mark(&mut w);
        assert_eq!((w.cwnd, w.ssthresh), (50_000, 50_000));
        // Windows with a quarter of their bytes marked pull alpha towards 0.25.
        for _ in 0..200 {
            d.count(750, false);
            d.count(250, true);
            d.end_window();
        }
        assert!((d.alpha() - 0.25).abs() < 1e-3, "alpha {}", d.alpha());
        w.cwnd = 80_000;
        d.on_mark(&mut w);
        assert_eq!(w.cwnd, 70_000, "cwnd * (1 - alpha / 2)");
        // Unmarked windows decay it by (1 - g) each.
        let a = d.alpha();
        d.count(1000, false);
        d.end_window();
        assert!((d.alpha() - a * (1.0 - DEFAULT_GAIN)).abs() < 1e-12);
    }
}
