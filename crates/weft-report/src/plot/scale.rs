//! Axis domains, tick positions and tick labels, with a readable display unit per axis.

use super::figure::{Axis, Quantity, Scale};

/// The unit an axis is labelled in: ticks show `value / divisor`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DisplayUnit {
    /// Unit name appended to the axis label (empty for bare numbers).
    pub name: &'static str,
    /// Base units per display unit.
    pub divisor: f64,
}

/// A resolved axis: its domain in base units, its ticks and its display unit.
#[derive(Clone, Debug, PartialEq)]
pub struct Resolved {
    /// Scale used to map values.
    pub scale: Scale,
    /// Lowest value on the axis, base units.
    pub lo: f64,
    /// Highest value on the axis, base units.
    pub hi: f64,
    /// Tick positions (base units) with their labels.
    pub ticks: Vec<(f64, String)>,
    /// The unit tick labels are in.
    pub unit: DisplayUnit,
}

/// At most this many ticks along an axis.
const MAX_TICKS: usize = 12;

impl Resolved {
    /// Resolves `axis` over data spanning `min..=max` (base units; finite).
    pub fn new(axis: &Axis, min: f64, max: f64) -> Self {
        let scale = match axis.scale {
            // A logarithmic axis cannot show zero or negative values: fall back to linear.
            Scale::Log2 | Scale::Log10 if min <= 0.0 => Scale::Linear,
            s => s,
        };
        let unit = display_unit(axis.quantity, scale, min.abs().max(max.abs()));
        let (lo, hi, ticks) = match scale {
            Scale::Linear => linear(axis, min, max, unit),
            Scale::Log2 => log2(axis.quantity, min, max, unit),
            Scale::Log10 => log10(min, max, unit),
        };
        Resolved {
            scale,
            lo,
            hi,
            ticks,
            unit,
        }
    }

    /// Where `v` falls on the axis, 0 at `lo` and 1 at `hi` (outside for values out of range).
    pub fn frac(&self, v: f64) -> f64 {
        let (a, b, x) = match self.scale {
            Scale::Linear => (self.lo, self.hi, v),
            Scale::Log2 => (
                self.lo.log2(),
                self.hi.log2(),
                v.max(f64::MIN_POSITIVE).log2(),
            ),
            Scale::Log10 => (
                self.lo.log10(),
                self.hi.log10(),
                v.max(f64::MIN_POSITIVE).log10(),
            ),
        };
        if b > a { (x - a) / (b - a) } else { 0.5 }
    }

    /// The axis label with its display unit, e.g. `latency (µs)`.
    pub fn label(&self, axis: &Axis) -> String {
        if self.unit.name.is_empty() {
            axis.label.clone()
        } else {
            format!("{} ({})", axis.label, self.unit.name)
        }
    }
}

/// The display unit for a quantity whose largest magnitude is `max`.
pub fn display_unit(q: Quantity, scale: Scale, max: f64) -> DisplayUnit {
    let u = |name, divisor| DisplayUnit { name, divisor };
    match q {
        Quantity::Plain => u("", 1.0),
        // Log-2 byte axes label each tick with its own binary prefix (1K, 64K, 1M).
        Quantity::Bytes if scale == Scale::Log2 => u("bytes", 1.0),
        Quantity::Bytes => pick(max, &[(1.0, "B"), (1024.0, "KiB"), (1048576.0, "MiB")]),
        Quantity::Nanoseconds => pick(max, &[(1.0, "ns"), (1e3, "µs"), (1e6, "ms"), (1e9, "s")]),
        Quantity::Seconds if max < 1.0 && max > 0.0 => u("ms", 1e-3),
        Quantity::Seconds => u("s", 1.0),
        Quantity::BitsPerSecond => pick(
            max,
            &[
                (1.0, "bit/s"),
                (1e3, "kbit/s"),
                (1e6, "Mbit/s"),
                (1e9, "Gbit/s"),
            ],
        ),
        Quantity::Fraction => u("%", 0.01),
    }
}

fn pick(max: f64, units: &[(f64, &'static str)]) -> DisplayUnit {
    let mut chosen = DisplayUnit {
        name: units.first().map_or("", |u| u.1),
        divisor: 1.0,
    };
    for &(divisor, name) in units {
        if max >= divisor || divisor == 1.0 {
            chosen = DisplayUnit { name, divisor };
        }
    }
    chosen
}

fn linear(axis: &Axis, min: f64, max: f64, unit: DisplayUnit) -> (f64, f64, Vec<(f64, String)>) {
    let (mut lo, mut hi) = (min / unit.divisor, max / unit.divisor);
    if axis.from_zero {
        lo = lo.min(0.0);
        hi = hi.max(0.0);
    }
    if hi - lo <= f64::EPSILON * hi.abs().max(1.0) {
        let pad = if hi == 0.0 { 1.0 } else { hi.abs() * 0.1 };
        if !(axis.from_zero && lo == 0.0) {
            lo -= pad;
        }
        hi += pad;
    }
    let step = nice_step((hi - lo) / 5.0);
    let lo = (lo / step).floor() * step;
    let hi = (hi / step).ceil() * step;
    let decimals = decimals_for(step);
    let n = ((hi - lo) / step).round() as usize;
    let ticks = (0..=n.min(MAX_TICKS * 2))
        .map(|i| {
            let v = lo + step * i as f64;
            (v * unit.divisor, format!("{:.*}", decimals, clean_zero(v)))
        })
        .collect();
    (lo * unit.divisor, hi * unit.divisor, ticks)
}

fn log2(q: Quantity, min: f64, max: f64, unit: DisplayUnit) -> (f64, f64, Vec<(f64, String)>) {
    let mut a = min.log2().floor() as i32;
    let mut b = max.log2().ceil() as i32;
    if a == b {
        a -= 1;
        b += 1;
    }
    let count = (b - a) as usize + 1;
    let stride = count.div_ceil(MAX_TICKS).max(1);
    let ticks = (a..=b)
        .step_by(stride)
        .map(|e| {
            let v = 2f64.powi(e);
            let label = if q == Quantity::Bytes {
                binary_label(v)
            } else {
                short_num(v / unit.divisor)
            };
            (v, label)
        })
        .collect();
    (2f64.powi(a), 2f64.powi(b), ticks)
}

fn log10(min: f64, max: f64, unit: DisplayUnit) -> (f64, f64, Vec<(f64, String)>) {
    let a = (min / unit.divisor).log10().floor() as i32;
    let mut b = (max / unit.divisor).log10().ceil() as i32;
    if a == b {
        b += 1;
    }
    let mut ticks = Vec::new();
    let mults: &[f64] = if b - a <= 2 { &[1.0, 2.0, 5.0] } else { &[1.0] };
    for e in a..=b {
        for &m in mults {
            let v = m * 10f64.powi(e);
            if e == b && m > 1.0 {
                continue;
            }
            ticks.push((v * unit.divisor, short_num(v)));
        }
    }
    (
        10f64.powi(a) * unit.divisor,
        10f64.powi(b) * unit.divisor,
        ticks,
    )
}

/// 1, 2 or 5 times a power of ten, at least `raw`.
fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let p = 10f64.powf(raw.log10().floor());
    let m = raw / p;
    let nice = if m <= 1.0 {
        1.0
    } else if m <= 2.0 {
        2.0
    } else if m <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * p
}

fn decimals_for(step: f64) -> usize {
    if step >= 1.0 {
        0
    } else {
        ((-step.log10()).ceil() as usize).min(6)
    }
}

fn clean_zero(v: f64) -> f64 {
    if v.abs() < 1e-12 { 0.0 } else { v }
}

/// A number in at most three significant decimals, trailing zeros trimmed.
pub fn short_num(v: f64) -> String {
    let decimals = if v.abs() >= 100.0 || v == 0.0 {
        0
    } else {
        (2 - v.abs().log10().floor() as i32).clamp(0, 9) as usize
    };
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A byte count with a binary prefix: 512, 1K, 64K, 1M.
pub fn binary_label(v: f64) -> String {
    const K: f64 = 1024.0;
    if v >= K * K * K {
        format!("{}G", short_num(v / (K * K * K)))
    } else if v >= K * K {
        format!("{}M", short_num(v / (K * K)))
    } else if v >= K {
        format!("{}K", short_num(v / K))
    } else {
        short_num(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log2_byte_axis_spans_powers_of_two() {
        let a = Axis::log2("size", Quantity::Bytes);
        let r = Resolved::new(&a, 1.0, 65536.0);
        assert_eq!((r.lo, r.hi), (1.0, 65536.0));
        let labels: Vec<_> = r.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels.first(), Some(&"1"));
        assert!(
            labels.contains(&"1K") && labels.contains(&"64K"),
            "{labels:?}"
        );
        assert!(r.ticks.len() <= MAX_TICKS + 1);
        assert!((r.frac(256.0) - 0.5).abs() < 1e-9);
    }

    #[test]
    fn linear_rate_axis_uses_gbit_and_starts_at_zero() {
        let a = Axis::linear("throughput", Quantity::BitsPerSecond);
        let r = Resolved::new(&a, 9.1e9, 23.4e9);
        assert_eq!(r.unit.name, "Gbit/s");
        assert_eq!(r.lo, 0.0);
        assert!(r.hi >= 23.4e9);
        assert_eq!(r.ticks.first().map(|t| t.1.as_str()), Some("0"));
        assert_eq!(r.label(&a), "throughput (Gbit/s)");
    }

    #[test]
    fn latency_in_microseconds_and_flat_data_gets_a_range() {
        let a = Axis::linear("latency", Quantity::Nanoseconds);
        let r = Resolved::new(&a, 20_000.0, 20_000.0);
        assert_eq!(r.unit.name, "µs");
        assert!(r.hi >= 20_000.0 && r.lo == 0.0);
        let mut b = a.clone();
        b.from_zero = false;
        let r = Resolved::new(&b, 20_000.0, 20_000.0);
        assert!(r.lo < 20_000.0 && r.hi > 20_000.0, "{r:?}");
    }

    #[test]
    fn log_axis_with_zero_falls_back_to_linear() {
        let a = Axis::log2("size", Quantity::Bytes);
        assert_eq!(Resolved::new(&a, 0.0, 64.0).scale, Scale::Linear);
    }

    #[test]
    fn log10_ticks_cover_decades() {
        let mut a = Axis::linear("latency", Quantity::Nanoseconds);
        a.scale = Scale::Log10;
        let r = Resolved::new(&a, 15_000.0, 3_000_000.0);
        assert_eq!(r.unit.name, "ms");
        assert!(r.lo <= 15_000.0 && r.hi >= 3_000_000.0);
        assert!(r.ticks.iter().any(|t| t.1 == "1"));
    }

    #[test]
    fn labels_are_short() {
        assert_eq!(short_num(0.05), "0.05");
        assert_eq!(short_num(1.5), "1.5");
        assert_eq!(short_num(250.0), "250");
        assert_eq!(binary_label(65536.0), "64K");
        assert_eq!(binary_label(1048576.0), "1M");
    }
}
