//! How late deadlines were served (ns), with percentiles: HdrHistogram with 3 significant digits
//! (about 0.1% resolution), any number of samples.

use serde::Serialize;

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

/// Counts of lags (HdrHistogram) and the exact largest one.
#[derive(Clone, Debug)]
pub struct LagHistogram {
    hist: hdrhistogram::Histogram<u64>,
    max: u64,
}

impl Default for LagHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LagHistogram {
    /// An empty histogram.
    pub fn new() -> Self {
        LagHistogram {
            // 3 significant digits is within hdrhistogram's range (0..=5): cannot fail.
            hist: hdrhistogram::Histogram::new(3).unwrap_or_else(|_| unreachable!()),
            max: 0,
        }
    }

    /// Records one lag of `ns` nanoseconds.
    pub fn record(&mut self, ns: u64) {
        // Grows the histogram as needed; past its largest trackable value (2^62 or so), the
        // count goes to the top bucket.
        if self.hist.record(ns).is_err() {
            self.hist.saturating_record(ns);
        }
        self.max = self.max.max(ns);
    }

    /// The lag at or below which a fraction `q` (0..1) of the samples lie (bucket lower bound).
    pub fn quantile(&self, q: f64) -> u64 {
        if self.hist.is_empty() {
            return 0;
        }
        let v = self.hist.value_at_quantile(q.clamp(0.0, 1.0));
        self.hist.lowest_equivalent(v).min(self.max)
    }

    /// Median, 99th, 99.9th percentile and maximum.
    pub fn summary(&self) -> LagSummary {
        LagSummary {
            count: self.hist.len(),
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
    fn quantiles_are_lower_edges_within_precision() {
        for v in [0u64, 1, 31, 32, 33, 63, 64, 100, 1000, 12_345, 1 << 40] {
            let mut h = LagHistogram::new();
            h.record(v);
            let lo = h.quantile(0.5);
            assert!(lo <= v && v - lo <= v / 1000, "v={v} lo={lo}");
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
