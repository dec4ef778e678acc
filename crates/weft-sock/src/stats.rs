//! Latency statistics: an HDR histogram of nanosecond latencies for the percentiles, exact running
//! moments (Welford) for the mean and standard deviation, and the 95% confidence interval of the mean
//! that `--converge` tests against.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Largest latency the histogram tracks: one hour in nanoseconds. Larger values are clamped to it.
const MAX_TRACKED_NS: u64 = 3_600_000_000_000;

/// Significant decimal digits the histogram keeps (relative error at most 0.1%).
const SIGFIG: u8 = 3;

/// Samples below which a convergence test never passes: the variance estimate of a handful of
/// samples is too unsteady to trust.
pub const MIN_CONVERGE_SAMPLES: u64 = 30;

/// Degrees of freedom above which the normal quantile replaces Student's t.
const NORMAL_ABOVE_DF: u64 = 1000;

/// The 0.975 quantile of the standard normal distribution (two-sided 95%).
const Z_975: f64 = 1.959_963_984_540_054;

/// Exact 0.975 quantiles of Student's t for 1 to 30 degrees of freedom.
const T_975: [f64; 30] = [
    12.706_204_736,
    4.302_652_730,
    3.182_446_305,
    2.776_445_105,
    2.570_581_836,
    2.446_911_851,
    2.364_624_252,
    2.306_004_135,
    2.262_157_163,
    2.228_138_852,
    2.200_985_160,
    2.178_812_830,
    2.160_368_656,
    2.144_786_688,
    2.131_449_546,
    2.119_905_299,
    2.109_815_578,
    2.100_922_040,
    2.093_024_054,
    2.085_963_447,
    2.079_613_845,
    2.073_873_068,
    2.068_657_610,
    2.063_898_562,
    2.059_538_553,
    2.055_529_439,
    2.051_830_516,
    2.048_407_142,
    2.045_229_642,
    2.042_272_456,
];

/// The two-sided 95% quantile used for a confidence interval with `df` degrees of freedom:
/// Student's t (exact table to 30, Cornish-Fisher expansion to 1000), the normal quantile above.
pub fn quantile_975(df: u64) -> f64 {
    if df == 0 {
        return f64::INFINITY;
    }
    if let Some(t) = usize::try_from(df - 1).ok().and_then(|i| T_975.get(i)) {
        return *t;
    }
    if df > NORMAL_ABOVE_DF {
        return Z_975;
    }
    // Cornish-Fisher expansion of the t quantile around the normal one (Abramowitz & Stegun
    // 26.7.5); relative error under 1e-6 for df >= 30.
    let z = Z_975;
    let n = df as f64;
    let z3 = z.powi(3);
    let z5 = z.powi(5);
    let z7 = z.powi(7);
    let z9 = z.powi(9);
    z + (z3 + z) / (4.0 * n)
        + (5.0 * z5 + 16.0 * z3 + 3.0 * z) / (96.0 * n * n)
        + (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * z) / (384.0 * n.powi(3))
        + (79.0 * z9 + 776.0 * z7 + 1482.0 * z5 - 1920.0 * z3 - 945.0 * z) / (92160.0 * n.powi(4))
}

/// Which distribution a confidence interval was taken from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CiMethod {
    /// Student's t with n-1 degrees of freedom (small samples).
    T,
    /// The normal distribution (large samples).
    Normal,
}

/// Collects latencies in nanoseconds and answers the summary statistics.
#[derive(Clone, Debug)]
pub struct LatencyStats {
    hist: Histogram<u64>,
    n: u64,
    mean: f64,
    m2: f64,
    min: u64,
    max: u64,
}

impl Default for LatencyStats {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyStats {
    /// An empty collection.
    pub fn new() -> Self {
        // Constant, valid bounds: construction cannot fail.
        let hist = Histogram::new_with_bounds(1, MAX_TRACKED_NS, SIGFIG)
            .expect("1 ns .. 1 h at 3 significant digits is a valid histogram");
        LatencyStats {
            hist,
            n: 0,
            mean: 0.0,
            m2: 0.0,
            min: u64::MAX,
            max: 0,
        }
    }

    /// Records one latency of `ns` nanoseconds. Values beyond one hour are clamped in the
    /// histogram (percentiles) but enter the mean and standard deviation exactly.
    pub fn record(&mut self, ns: u64) {
        self.hist.saturating_record(ns.clamp(1, MAX_TRACKED_NS));
        self.n += 1;
        let x = ns as f64;
        let delta = x - self.mean;
        self.mean += delta / self.n as f64;
        self.m2 += delta * (x - self.mean);
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
    }

    /// Number of latencies recorded.
    pub fn count(&self) -> u64 {
        self.n
    }

    /// Arithmetic mean in nanoseconds (0 when empty).
    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// Sample standard deviation (n-1 denominator) in nanoseconds; 0 for fewer than two samples.
    pub fn stddev(&self) -> f64 {
        if self.n < 2 {
            0.0
        } else {
            (self.m2 / (self.n - 1) as f64).sqrt()
        }
    }

    /// Smallest latency in nanoseconds (exact), or `None` when empty.
    pub fn min(&self) -> Option<u64> {
        (self.n > 0).then_some(self.min)
    }

    /// Largest latency in nanoseconds (exact), or `None` when empty.
    pub fn max(&self) -> Option<u64> {
        (self.n > 0).then_some(self.max)
    }

    /// The latency in nanoseconds at or below which `q` (0..=1) of the samples lie, within the
    /// histogram's 0.1% precision, and never outside the exact minimum and maximum (a
    /// histogram bucket's highest value can lie above the largest sample in it: p99 6.49 ms
    /// printed over a maximum of 6.48); `None` when empty.
    pub fn percentile(&self, q: f64) -> Option<u64> {
        (self.n > 0).then(|| {
            self.hist
                .value_at_quantile(q.clamp(0.0, 1.0))
                .clamp(self.min, self.max)
        })
    }

    /// Half-width in nanoseconds of the 95% confidence interval of the mean, and the method;
    /// `None` for fewer than two samples.
    pub fn ci95_half_width(&self) -> Option<(f64, CiMethod)> {
        if self.n < 2 {
            return None;
        }
        let df = self.n - 1;
        let method = if df > NORMAL_ABOVE_DF {
            CiMethod::Normal
        } else {
            CiMethod::T
        };
        Some((
            quantile_975(df) * self.stddev() / (self.n as f64).sqrt(),
            method,
        ))
    }

    /// The CI half-width relative to the mean (e.g. 0.01 for 1%); `None` when undefined.
    pub fn relative_ci(&self) -> Option<f64> {
        let (h, _) = self.ci95_half_width()?;
        (self.mean > 0.0).then(|| h / self.mean)
    }

    /// Whether the mean has converged to within `rel` (a fraction): at least
    /// [`MIN_CONVERGE_SAMPLES`] samples and a relative CI half-width below `rel`.
    pub fn converged(&self, rel: f64) -> bool {
        self.n >= MIN_CONVERGE_SAMPLES && self.relative_ci().is_some_and(|r| r < rel)
    }

    /// The summary of everything recorded so far.
    pub fn summary(&self) -> LatencySummary {
        let ci = self.ci95_half_width();
        LatencySummary {
            count: self.n,
            min_ns: self.min().unwrap_or(0),
            mean_ns: self.mean,
            stddev_ns: self.stddev(),
            p50_ns: self.percentile(0.50).unwrap_or(0),
            p90_ns: self.percentile(0.90).unwrap_or(0),
            p99_ns: self.percentile(0.99).unwrap_or(0),
            p999_ns: self.percentile(0.999).unwrap_or(0),
            p9999_ns: self.percentile(0.9999).unwrap_or(0),
            max_ns: self.max().unwrap_or(0),
            ci95_ns: ci.map(|c| c.0),
            ci_method: ci.map(|c| c.1),
        }
    }
}

/// Summary statistics of a set of latencies; all times in nanoseconds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Number of latencies.
    pub count: u64,
    /// Smallest latency, ns.
    pub min_ns: u64,
    /// Mean latency, ns.
    pub mean_ns: f64,
    /// Sample standard deviation, ns.
    pub stddev_ns: f64,
    /// Median, ns.
    pub p50_ns: u64,
    /// 90th percentile, ns.
    pub p90_ns: u64,
    /// 99th percentile, ns.
    pub p99_ns: u64,
    /// 99.9th percentile, ns.
    pub p999_ns: u64,
    /// 99.99th percentile, ns.
    pub p9999_ns: u64,
    /// Largest latency, ns.
    pub max_ns: u64,
    /// Half-width of the 95% confidence interval of the mean, ns (absent below two samples).
    pub ci95_ns: Option<f64>,
    /// Distribution the confidence interval was taken from.
    pub ci_method: Option<CiMethod>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1e-12)
    }

    #[test]
    fn percentiles_of_one_to_a_thousand() {
        let mut s = LatencyStats::new();
        for v in 1..=1000 {
            s.record(v);
        }
        let sum = s.summary();
        assert_eq!(sum.count, 1000);
        assert_eq!(sum.min_ns, 1);
        assert_eq!(sum.max_ns, 1000);
        assert_eq!(sum.p50_ns, 500);
        assert_eq!(sum.p90_ns, 900);
        assert_eq!(sum.p99_ns, 990);
        assert_eq!(sum.p999_ns, 999);
        assert_eq!(sum.p9999_ns, 1000);
        assert!(close(sum.mean_ns, 500.5, 1e-12));
        // Sample standard deviation of 1..=n is sqrt(n(n+1)/12).
        assert!(close(
            sum.stddev_ns,
            (1000.0f64 * 1001.0 / 12.0).sqrt(),
            1e-9
        ));
    }

    #[test]
    fn percentiles_never_exceed_the_maximum_nor_fall_below_the_minimum() {
        // 6.48 ms falls in a bucket whose highest value is above it.
        let mut s = LatencyStats::new();
        for _ in 0..100 {
            s.record(6_480_001);
        }
        let sum = s.summary();
        assert_eq!(sum.max_ns, 6_480_001);
        for p in [
            sum.p50_ns,
            sum.p90_ns,
            sum.p99_ns,
            sum.p999_ns,
            sum.p9999_ns,
        ] {
            assert_eq!(p, 6_480_001, "{sum:?}");
        }
    }

    #[test]
    fn percentiles_of_large_values_keep_three_digits() {
        let mut s = LatencyStats::new();
        for v in 1..=100u64 {
            s.record(v * 1_000_000); // 1 ms .. 100 ms
        }
        let p50 = s.percentile(0.5).unwrap() as f64;
        assert!(close(p50, 50e6, 1e-3), "{p50}");
        assert_eq!(s.max(), Some(100_000_000));
        assert_eq!(s.min(), Some(1_000_000));
    }

    #[test]
    fn ci_of_a_small_known_sample_uses_student_t() {
        let mut s = LatencyStats::new();
        for v in [1, 2, 3, 4, 5] {
            s.record(v);
        }
        assert!(close(s.mean(), 3.0, 1e-12));
        assert!(close(s.stddev(), 2.5f64.sqrt(), 1e-12));
        let (h, m) = s.ci95_half_width().unwrap();
        assert_eq!(m, CiMethod::T);
        // t(0.975, 4) = 2.776445; s/sqrt(n) = 0.707107.
        assert!(
            close(h, 2.776_445 * 2.5f64.sqrt() / 5f64.sqrt(), 1e-6),
            "{h}"
        );
        assert!(close(h, 1.963_243, 1e-5), "{h}");
    }

    #[test]
    fn ci_of_a_large_sample_uses_the_normal() {
        let mut s = LatencyStats::new();
        for i in 0..2000u64 {
            s.record(if i % 2 == 0 { 90 } else { 110 });
        }
        let (h, m) = s.ci95_half_width().unwrap();
        assert_eq!(m, CiMethod::Normal);
        let sd = s.stddev();
        assert!(close(sd, 10.0 * (2000.0f64 / 1999.0).sqrt(), 1e-9));
        assert!(close(h, 1.959_964 * sd / 2000f64.sqrt(), 1e-6));
    }

    #[test]
    fn t_quantiles_match_tables_and_approach_the_normal() {
        assert!(close(quantile_975(1), 12.706_205, 1e-6));
        assert!(close(quantile_975(10), 2.228_139, 1e-6));
        // Published values: t(0.975, 40) = 2.021075, t(0.975, 60) = 2.000298, t(0.975, 120) = 1.979930.
        assert!(close(quantile_975(40), 2.021_075, 1e-5));
        assert!(close(quantile_975(60), 2.000_298, 1e-5));
        assert!(close(quantile_975(120), 1.979_930, 1e-5));
        assert!(close(quantile_975(1000), 1.962_339, 1e-5));
        assert_eq!(quantile_975(1001), Z_975);
        assert!(quantile_975(0).is_infinite());
        for df in 1..1100 {
            assert!(quantile_975(df) >= quantile_975(df + 1), "monotone at {df}");
        }
    }

    #[test]
    fn convergence_needs_enough_samples_and_a_narrow_interval() {
        let mut s = LatencyStats::new();
        for _ in 0..MIN_CONVERGE_SAMPLES - 1 {
            s.record(1000);
        }
        assert!(!s.converged(0.01), "too few samples");
        s.record(1000);
        assert!(s.converged(0.01));
        let mut wide = LatencyStats::new();
        for i in 0..100 {
            wide.record(if i % 2 == 0 { 100 } else { 10_000 });
        }
        assert!(!wide.converged(0.01));
        assert!(wide.converged(0.5));
    }

    #[test]
    fn empty_and_single_sample() {
        let s = LatencyStats::new();
        assert_eq!(s.min(), None);
        assert_eq!(s.percentile(0.5), None);
        assert!(s.ci95_half_width().is_none());
        let sum = s.summary();
        assert_eq!(sum.count, 0);
        assert_eq!(sum.ci95_ns, None);
        let mut one = LatencyStats::new();
        one.record(0);
        assert_eq!(one.min(), Some(0));
        assert_eq!(
            one.percentile(0.5),
            Some(0),
            "recorded at the histogram's 1 ns floor, reported at the sample's 0"
        );
        assert!(one.ci95_half_width().is_none());
    }

    proptest::proptest! {
        /// Against a brute-force reference: exact moments, and percentiles within the
        /// histogram's 0.1% of the nearest-rank value of the sorted sample.
        #[test]
        fn matches_a_brute_force_reference(
            v in proptest::collection::vec(1u64..10_000_000_000, 1..400),
            q in 0.0f64..=1.0,
        ) {
            let mut s = LatencyStats::new();
            for &x in &v {
                s.record(x);
            }
            let n = v.len() as f64;
            let mean = v.iter().map(|&x| x as f64).sum::<f64>() / n;
            proptest::prop_assert!(close(s.mean(), mean, 1e-9));
            if v.len() > 1 {
                let var = v.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / (n - 1.0);
                proptest::prop_assert!((s.stddev() - var.sqrt()).abs() <= 1e-6 * var.sqrt().max(1.0));
            }
            let mut sorted = v.clone();
            sorted.sort_unstable();
            proptest::prop_assert_eq!(s.min(), sorted.first().copied());
            proptest::prop_assert_eq!(s.max(), sorted.last().copied());
            let rank = ((q * n).ceil() as usize).clamp(1, sorted.len());
            let exact = sorted[rank - 1] as f64;
            let got = s.percentile(q).unwrap() as f64;
            proptest::prop_assert!((got - exact).abs() <= exact * 1e-3 + 1.0, "q {} got {} exact {}", q, got, exact);
        }
    }
}
