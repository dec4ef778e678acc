//! Metrics of a run: a log-linear histogram for delays, per-port counts, frame reassembly and
//! occupancy over time.

use serde_json::{Value, json};

use crate::cell::SimCell;

const SUB_BITS: u32 = 10;
const SUB: u64 = 1 << SUB_BITS;
const HALF: u64 = SUB / 2;

/// A histogram of non-negative integers (delays in slots or nanoseconds): exact below 1024,
/// within 0.2% above, in fixed memory (HdrHistogram's layout with 10 bits of precision).
#[derive(Clone, Debug)]
pub struct Histogram {
    counts: Vec<u64>,
    n: u64,
    sum: u128,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

fn bucket(v: u64) -> usize {
    if v < SUB {
        return v as usize;
    }
    let shift = 63 - v.leading_zeros() - (SUB_BITS - 1);
    (SUB + u64::from(shift - 1) * HALF + ((v >> shift) - HALF)) as usize
}

fn bucket_low(b: usize) -> u64 {
    let b = b as u64;
    if b < SUB {
        return b;
    }
    let shift = (b - SUB) / HALF + 1;
    let mantissa = (b - SUB) % HALF + HALF;
    mantissa << shift
}

impl Histogram {
    /// An empty histogram.
    pub fn new() -> Self {
        Histogram {
            counts: vec![0; bucket(u64::MAX) + 1],
            n: 0,
            sum: 0,
            max: 0,
        }
    }

    /// Records one value.
    #[inline]
    pub fn record(&mut self, v: u64) {
        self.counts[bucket(v)] += 1;
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

    /// The value at quantile `q` in `[0, 1]` (lower edge of its bucket; exact below 1024).
    pub fn quantile(&self, q: f64) -> u64 {
        if self.n == 0 {
            return 0;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.n as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (b, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return bucket_low(b).min(self.max);
            }
        }
        self.max
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
    fn buckets_round_trip_and_quantiles() {
        for v in [0u64, 1, 1023, 1024, 1025, 4095, 1 << 40, u64::MAX] {
            let lo = bucket_low(bucket(v));
            assert!(lo <= v && v - lo <= v / 500, "{v} -> {lo}");
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
