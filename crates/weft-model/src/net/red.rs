//! RED-style ECN marking, DCQCN's congestion point: a frame that finds `Kmin` bytes or fewer
//! queued is never marked, one that finds more than `Kmax` always, and between the two with a
//! probability that grows linearly from zero to `Pmax` (the DCQCN paper, section 3.1, after
//! RED's gentle ramp; the paper's values are `Kmin` 5 KB, `Kmax` 200 KB, `Pmax` 1%).

use serde::{Deserialize, Serialize};

use crate::rng::Rng;

/// A RED marking profile on an output queue's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RedSpec {
    /// Bytes queued up to which nothing is marked.
    pub kmin: u64,
    /// Bytes queued beyond which everything is marked.
    pub kmax: u64,
    /// The marking probability as the queue reaches `kmax` (0 to 1).
    pub pmax: f64,
}

impl RedSpec {
    /// The DCQCN paper's profile (section 5): 5 KB, 200 KB, 1%.
    pub const DCQCN: RedSpec = RedSpec {
        kmin: 5_000,
        kmax: 200_000,
        pmax: 0.01,
    };

    /// The probability of marking a frame that finds `queued` bytes.
    pub fn probability(&self, queued: u64) -> f64 {
        if queued <= self.kmin {
            0.0
        } else if queued > self.kmax {
            1.0
        } else {
            let span = self.kmax.saturating_sub(self.kmin).max(1) as f64;
            self.pmax * (queued - self.kmin) as f64 / span
        }
    }

    /// Whether a frame that finds `queued` bytes is marked, drawn from `rng`.
    pub fn mark(&self, queued: u64, rng: &mut Rng) -> bool {
        let p = self.probability(queued);
        p >= 1.0 || (p > 0.0 && rng.unit() < p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marking_ramps_from_kmin_to_pmax_at_kmax_then_marks_everything() {
        let r = RedSpec::DCQCN;
        assert_eq!(r.probability(0), 0.0);
        assert_eq!(r.probability(5_000), 0.0);
        assert!((r.probability(102_500) - 0.005).abs() < 1e-12);
        assert!((r.probability(200_000) - 0.01).abs() < 1e-12);
        assert_eq!(r.probability(200_001), 1.0);
    }

    #[test]
    fn the_fraction_marked_follows_the_probability() {
        let r = RedSpec {
            kmin: 0,
            kmax: 100,
            pmax: 0.5,
        };
        let mut rng = Rng::new(7);
        let n = 100_000;
        // Half way up the ramp: a quarter marked.
        let marked = (0..n).filter(|_| r.mark(50, &mut rng)).count();
        let f = marked as f64 / n as f64;
        assert!((f - 0.25).abs() < 0.01, "{f}");
        assert!(!(0..n).any(|_| r.mark(0, &mut rng)));
        assert!((0..n).all(|_| r.mark(101, &mut rng)));
    }
}
