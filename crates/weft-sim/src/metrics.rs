//! Metrics of a run: a log-linear histogram for delays, per-port counts, frame reassembly and
//! occupancy over time.

use serde_json::{Value, json};

use crate::cell::SimCell;

/// A histogram of non-negative integers (delays in slots or nanoseconds): HdrHistogram with 3
/// significant digits (exact below 2048, within 0.05% above), growing as values need; the mean
/// and the maximum are kept exactly beside it.
#[derive(Clone, Debug)]
pub struct Histogram {
    hist: hdrhistogram::Histogram<u64>,
    n: u64,
    sum: u128,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

impl Histogram {
    /// An empty histogram.
    pub fn new() -> Self {
        Histogram {
            // 3 significant digits is within hdrhistogram's range (0..=5): cannot fail.
            hist: hdrhistogram::Histogram::new(3).unwrap_or_else(|_| unreachable!()),
            n: 0,
            sum: 0,
            max: 0,
        }
    }

    /// Records one value.
    #[inline]
    pub fn record(&mut self, v: u64) {
        // Grows the histogram as needed; past its largest trackable value (2^62 or so), the
        // count goes to the top bucket.
        if self.hist.record(v).is_err() {
            self.hist.saturating_record(v);
        }
        self.n += 1;
        self.sum += u128::from(v);
        self.max = self.max.max(v);
    }

    /// Values recorded.
    pub fn count(&self) -> u64 {
        self.n
    }

    /// The exact mean (zero when empty).
    pub fn mean(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sum as f64 / self.n as f64
        }
    }

    /// The largest value recorded.
    pub fn max(&self) -> u64 {
        self.max
    }

    /// The value at quantile `q` in `[0, 1]` (lower edge of its bucket; exact below 2048).
    pub fn quantile(&self, q: f64) -> u64 {
        if self.n == 0 {
            return 0;
        }
        let v = self.hist.value_at_quantile(q.clamp(0.0, 1.0));
        self.hist.lowest_equivalent(v).min(self.max)
    }

    /// Mean and the usual percentiles as JSON, values in `unit` (a key suffix such as `slots`).
    pub fn summary(&self, unit: &str) -> Value {
        json!({
            format!("mean_{unit}"): self.mean(),
            format!("p50_{unit}"): self.quantile(0.5),
            format!("p90_{unit}"): self.quantile(0.9),
            format!("p99_{unit}"): self.quantile(0.99),
            format!("max_{unit}"): self.max,
            "count": self.n,
        })
    }
}

/// Per-flow reassembly at the receiving side: a frame counts as good when all of its cells
/// arrived (cells of a flow arrive in order in every fabric here).
#[derive(Clone, Debug, Default)]
pub struct FrameTracker {
    state: Vec<(u32, u32)>,
    /// Frames whose every cell arrived.
    pub good_frames: u64,
    /// Cells belonging to good frames.
    pub good_cells: u64,
}

impl FrameTracker {
    /// Takes a delivered cell.
    #[inline]
    pub fn deliver(&mut self, c: &SimCell) {
        let f = c.flow as usize;
        if f >= self.state.len() {
            self.state.resize(f + 1, (u32::MAX, 0));
        }
        let st = &mut self.state[f];
        if st.0 != c.frame {
            *st = (c.frame, 0);
        }
        st.1 += 1;
        if c.eof && st.1 == c.frame_cells {
            self.good_frames += 1;
            self.good_cells += u64::from(c.frame_cells);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_lower_edges_within_precision() {
        for v in [0u64, 1, 1023, 1024, 1025, 2047, 4095, 1 << 40] {
            let mut h = Histogram::new();
            h.record(v);
            h.record(v.saturating_add(1));
            let lo = h.quantile(0.5);
            assert!(lo <= v && v - lo <= v / 1000, "{v} -> {lo}");
            if v < 2048 {
                assert_eq!(lo, v);
            }
        }
        let mut h = Histogram::new();
        for v in 1..=100 {
            h.record(v);
        }
        assert_eq!(h.quantile(0.5), 50);
        assert_eq!(h.quantile(0.99), 99);
        assert_eq!(h.quantile(1.0), 100);
        assert!((h.mean() - 50.5).abs() < 1e-9);
    }
}
