//! A compact histogram of how late deadlines were served (ns), with percentiles: logarithmic
//! buckets with 32 steps per power of two (about 2% resolution), any number of samples.

use serde::Serialize;

const SUB: u32 = 32;

/// Lag percentiles, in nanoseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LagSummary {
    /// Deadlines observed.
    pub count: u64,
    /// Median lag.
    pub p50_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// 99.9th percentile.
    pub p999_ns: u64,
    /// Largest lag.
    pub max_ns: u64,
}

/// Counts of lags in logarithmic buckets.
#[derive(Clone, Debug)]
pub struct LagHistogram {
    buckets: Vec<u64>,
    count: u64,
    max: u64,
}

impl Default for LagHistogram {
    fn default() -> Self {
        Self::new()
    }
}

fn bucket(v: u64) -> usize {
    if v < SUB as u64 {
        return v as usize;
    }
    let e = 63 - v.leading_zeros(); // v >= 2^e, e >= 5
    let shift = e - SUB.trailing_zeros();
    let sub = (v >> shift) as u32 - SUB; // 0..SUB
    (SUB * (e - SUB.trailing_zeros() + 1) + sub) as usize
}

fn bucket_low(i: usize) -> u64 {
    let i = i as u32;
    if i < SUB {
        return i as u64;
    }
    let e = i / SUB - 1 + SUB.trailing_zeros();
    let sub = i % SUB;
    ((SUB + sub) as u64) << (e - SUB.trailing_zeros())
}

impl LagHistogram {
    /// An empty histogram.
    pub fn new() -> Self {
        LagHistogram {
            buckets: vec![0; (SUB * 60) as usize],
            count: 0,
            max: 0,
        }
    }

    /// Records one lag of `ns` nanoseconds.
    pub fn record(&mut self, ns: u64) {
        let b = bucket(ns).min(self.buckets.len() - 1);
        self.buckets[b] += 1;
        self.count += 1;
        self.max = self.max.max(ns);
    }

    /// The lag at or below which a fraction `q` (0..1) of the samples lie (bucket lower bound).
    pub fn quantile(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let target = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (i, &c) in self.buckets.iter().enumerate() {
            seen += c;
            if seen >= target {
                return bucket_low(i).min(self.max);
            }
        }
        self.max
    }

    /// Median, 99th, 99.9th percentile and maximum.
    pub fn summary(&self) -> LagSummary {
        LagSummary {
            count: self.count,
            p50_ns: self.quantile(0.5),
            p99_ns: self.quantile(0.99),
            p999_ns: self.quantile(0.999),
            max_ns: self.max,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_monotonic_and_tight() {
        let mut last = 0;
        for v in [0u64, 1, 31, 32, 33, 63, 64, 100, 1000, 12_345, 1 << 40] {
            let b = bucket(v);
            assert!(b >= last);
            last = b;
            let lo = bucket_low(b);
            assert!(lo <= v && v - lo <= v / 32 + 1, "v={v} lo={lo}");
        }
    }

    #[test]
    fn percentiles() {
        let mut h = LagHistogram::new();
        for v in 1..=1000u64 {
            h.record(v * 1000);
        }
        let s = h.summary();
        assert_eq!(s.count, 1000);
        assert!((480_000..=500_000).contains(&s.p50_ns), "{s:?}");
        assert!((960_000..=990_000).contains(&s.p99_ns), "{s:?}");
        assert_eq!(s.max_ns, 1_000_000);
    }
}
